package testutil

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
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
		_ = srv.Close() // closes n and every connection the server holds
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
