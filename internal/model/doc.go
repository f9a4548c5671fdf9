// Package model holds the pure mathematics of planner: token and latency
// distributions, the service time of one request, queueing (Erlang C and the
// Allen–Cunneen approximation), the Universal Scalability Law, quantiles, and
// the seeded Monte Carlo that turns them into percentiles.
//
// Times are seconds and token counts are float64 throughout. The package
// imports no other package of planner.
package model
