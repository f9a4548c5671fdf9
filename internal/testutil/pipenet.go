package testutil

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// PipeNet serves an HTTP handler over in-memory connections (net.Pipe)
// instead of sockets, so that a server and its clients can run inside a
// testing/synctest bubble: a goroutine waiting on a pipe is durably
// blocked and the bubble's fake clock moves on, while one waiting on a
// socket is not. Every address dialled reaches the handler.
type PipeNet struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// ServePipe serves h on a new PipeNet until the test ends. Inside a
// synctest bubble, call it from within the bubble.
func ServePipe(t testing.TB, h http.Handler) *PipeNet {
	t.Helper()
	n := &PipeNet{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: h}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(n)
	}()
	t.Cleanup(func() {
		// Shutdown waits, on the bubble's clock, for the connections that
		// are closing to finish; a real socket would let them go on alone.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = srv.Close() // closes n and every connection the server still holds
		<-served
	})
	return n
}

// DialContext opens a connection to the handler; its signature is that of
// net.Dialer.DialContext, for http.Transport and probe.Config.
func (n *PipeNet) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case n.conns <- server:
		return client, nil
	case <-n.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Accept waits for the next connection; it is the server's side of
// net.Listener.
func (n *PipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-n.conns:
		return c, nil
	case <-n.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting connections.
func (n *PipeNet) Close() error {
	n.once.Do(func() { close(n.done) })
	return nil
}

// Addr is a placeholder address: pipes have none.
func (n *PipeNet) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// pipeServers numbers the servers of PipeServer, so that each has a URL of
// its own.
var pipeServers atomic.Int64

// PipeServer serves handler on a new PipeNet and returns a base URL for it
// ("http://pipe-N") and the dialer that reaches it, for tests that take a
// URL and a dial function (probe.Config.DialContext).
func PipeServer(t testing.TB, handler http.Handler) (base string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) {
	t.Helper()
	n := ServePipe(t, handler)
	return fmt.Sprintf("http://pipe-%d", pipeServers.Add(1)), n.DialContext
}

// PipeClient is an HTTP client whose every connection goes through dial;
// its idle connections close when the test ends.
func PipeClient(t testing.TB, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	tr := &http.Transport{DialContext: dial, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}
