package testutil

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// PipeServer serves handler over an in-memory network (net.Pipe), for
// tests run under testing/synctest: a real socket is not "durably
// blocked", so the fake clock would never move while a connection waits,
// whereas a pipe is. It returns the base URL to use ("http://pipe-N", N
// distinct per server) and the dialer that reaches the server, to put in a
// transport's DialContext (probe.Config.DialContext). The server closes
// when the test ends.
func PipeServer(t testing.TB, handler http.Handler) (base string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) {
	t.Helper()
	l := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: handler}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		// Shutdown waits, on the bubble's clock, for the connections that
		// are closing to finish; a real socket would let them go on alone.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = srv.Close()
		<-served
	})
	return fmt.Sprintf("http://pipe-%d", pipeServers.Add(1)), l.dial
}

// pipeServers numbers the pipe servers, so that their URLs differ.
var pipeServers atomic.Int64

// PipeClient is an HTTP client whose every connection goes through dial;
// its idle connections close when the test ends.
func PipeClient(t testing.TB, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	tr := &http.Transport{DialContext: dial, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// pipeListener hands the server the far ends of the pipes that dial opens.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, errors.New("pipe server closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
