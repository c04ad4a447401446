//go:build !race

package fact

// raceEnabled is true when the tests run under the race detector.
const raceEnabled = false
