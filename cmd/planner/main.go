// Command planner plans client-side concurrency pools for teams calling LLM
// APIs, serves the planning API, and measures endpoints with bounded probes.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := withSignals(context.Background())
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// interruption is the cause of a command's context once SIGINT or SIGTERM
// arrived: every command stops its work then (a plan, a sweep or a
// simulation at once; a probe after saving what it measured; the service
// after its requests in flight), and one that did not finish exits with
// 128 plus the signal's number.
type interruption struct{ sig syscall.Signal }

func (i interruption) Error() string {
	switch i.sig {
	case syscall.SIGINT:
		return "stopped by SIGINT"
	case syscall.SIGTERM:
		return "stopped by SIGTERM"
	}
	return "stopped by " + i.sig.String()
}

// withSignals is ctx, cancelled with an interruption when SIGINT or SIGTERM
// arrives; stop ends the watch.
func withSignals(ctx context.Context) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-signals:
			sig, _ := s.(syscall.Signal)
			cancel(interruption{sig})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(signals)
		close(done)
		cancel(context.Canceled)
	}
}
