//go:build !race

package probe

// raceDetector reports whether the tests run under the race detector, whose
// sync.Pool drops items at random, so that pooled buffers are allocated
// again now and then and allocation counts are not exact there.
const raceDetector = false
