//go:build !race

package probe

// raceDetector reports whether the tests run under the race detector,
// whose slowdown makes millisecond timing meaningless.
const raceDetector = false
