//go:build race

package rank

// raceEnabled is true when the tests run under the race detector.
const raceEnabled = true
