//go:build !race

package vector

// raceEnabled is true under the race detector, which slows the float loops about tenfold.
const raceEnabled = false
