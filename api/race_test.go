//go:build race

package api

// raceDetector reports whether the tests run under the race detector,
// whose instrumented build allocates more than the server does.
const raceDetector = true
