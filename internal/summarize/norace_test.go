//go:build !race

package summarize

// raceEnabled says that the tests run with the race detector.
const raceEnabled = false
