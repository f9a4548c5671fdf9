//go:build race

package sim

import "time"

// The race detector slows clients and server alike by an order of magnitude.
func init() { lateSlack = 15 * time.Millisecond }
