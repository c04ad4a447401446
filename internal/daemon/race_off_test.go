//go:build !race

package daemon_test

// raceDetector is true in a binary built with -race.
const raceDetector = false
