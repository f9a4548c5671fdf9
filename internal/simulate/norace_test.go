//go:build !race

package simulate

// raceDetector reports whether the tests run under the race detector, whose
// slowdown makes the longest statistical runs too slow to repeat there.
const raceDetector = false
