// Package simulate runs a scenario's plan as a seeded discrete-event
// simulation, so that a team sees the plan at work before deploying it:
// per class the arrivals (Poisson or a renewal process at the demand, a
// demand profile, or replayed start times), the pool's semaphore and FIFO
// queue, the pacing token bucket, admission shedding, retries with
// full-jitter backoff that honour Retry-After, and optionally AIMD; the
// provider enforcing each quota limit per burst window and each daily
// limit per day; and endpoints whose latency follows the load in flight,
// drawn from the same model the plan predicts with. The model, its
// choices and its limits are in docs/simulate.md.
//
// A run is bounded: in simulated time (Options.DurationS) and in events
// (Options.MaxEvents). Its memory is bounded by the event cap, since every
// event holds or creates at most one request, and by the latency samples
// kept per class (Options.Samples). The same scenario and options give the
// same result, byte for byte once encoded: every random stream is a seeded
// PCG, events at the same time run in the order they were scheduled, and
// no map order or wall clock reaches the output.
package simulate
