package fdbudget_test

import (
	"context"
	"net"
	"testing"
	"testing/synctest"

	"github.com/agentchat/agentchat/internal/fdbudget"
)

func TestPlan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                              string
		limit, open, reserve, runs        int
		wantConns, wantRuns, wantOverflow int
	}{
		{name: "unknown limit bounds nothing", limit: 0, open: 10, reserve: 64},
		{name: "a chat is a connection and a run", limit: 1024, open: 24, reserve: 64, wantConns: 468, wantRuns: 468, wantOverflow: 16},
		{name: "odd room goes to connections", limit: 1024, open: 25, reserve: 64, wantConns: 468, wantRuns: 467, wantOverflow: 16},
		{name: "runs asked for fit", limit: 1024, open: 24, reserve: 64, runs: 100, wantConns: 836, wantRuns: 100, wantOverflow: 16},
		{name: "runs asked for do not fit", limit: 1024, open: 24, reserve: 64, runs: 5000, wantConns: 1, wantRuns: 935, wantOverflow: 16},
		{name: "no room at all still serves one", limit: 64, open: 30, reserve: 64, wantConns: 1, wantRuns: 1, wantOverflow: 16},
	}
	for _, tt := range tests {
		b := fdbudget.Plan(tt.limit, tt.limit, tt.open, tt.reserve, tt.runs)
		if b.Conns != tt.wantConns || b.Runs != tt.wantRuns || b.Overflow != tt.wantOverflow || b.Bounded() != (tt.limit > 0) {
			t.Errorf("%s: %+v, want %d connections, %d runs, %d overflow", tt.name, b, tt.wantConns, tt.wantRuns, tt.wantOverflow)
		}
		if b.Bounded() && b.Open+b.Reserve+b.Conns+b.Runs > max(tt.limit, b.Open+b.Reserve+2) {
			t.Errorf("%s: %+v plans more than the limit", tt.name, b)
		}
	}
}

// chanListener hands out the connections sent to it.
type chanListener struct {
	conns  chan net.Conn
	closed chan struct{}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}
func (l *chanListener) Close() error   { close(l.closed); return nil }
func (l *chanListener) Addr() net.Addr { return &net.TCPAddr{} }

// Connections beyond Conns are accepted marked as overflowing, up to
// Overflow more; past that Accept waits until one of them closes, and
// Close ends the wait.
func TestListener(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		inner := &chanListener{conns: make(chan net.Conn), closed: make(chan struct{})}
		ln := fdbudget.Budget{Limit: 100, Conns: 2, Overflow: 1}.Listen(inner)
		type accepted struct {
			c   net.Conn
			err error
		}
		got := make(chan accepted)
		go func() {
			for {
				c, err := ln.Accept()
				got <- accepted{c, err}
				if err != nil {
					return
				}
			}
		}()
		var conns []net.Conn
		for i := range 3 {
			a, b := net.Pipe()
			defer a.Close()
			inner.conns <- b
			acc := <-got
			if acc.err != nil {
				t.Fatal(acc.err)
			}
			if over := fdbudget.Overflowed(fdbudget.ConnContext(context.Background(), acc.c)); over != (i == 2) {
				t.Fatalf("connection %d: overflowed %v", i, over)
			}
			conns = append(conns, acc.c)
		}
		if n := ln.(*fdbudget.Listener).Served(); n != 2 {
			t.Fatalf("served %d", n)
		}
		// A fourth waits: Accept is not even asked for it.
		a, b := net.Pipe()
		defer a.Close()
		sent := make(chan struct{})
		go func() { inner.conns <- b; close(sent) }()
		synctest.Wait()
		select {
		case <-sent:
			t.Fatal("a fourth connection was accepted past the overflow")
		default:
		}
		conns[0].Close() // a served one ends: the fourth is served as usual
		conns[0].Close() // twice: counted once
		<-sent
		acc := <-got
		if fdbudget.Overflowed(fdbudget.ConnContext(context.Background(), acc.c)) {
			t.Fatal("the fourth connection overflowed with a served slot free")
		}
		if n := ln.(*fdbudget.Listener).Served(); n != 2 {
			t.Fatalf("served %d", n)
		}
		synctest.Wait() // Accept waits for a slot again
		ln.Close()
		if acc := <-got; acc.err == nil {
			t.Fatal("Accept after Close succeeded")
		}
	})
}

// A zero Budget leaves the listener alone.
func TestUnboundedListener(t *testing.T) {
	t.Parallel()
	inner := &chanListener{conns: make(chan net.Conn), closed: make(chan struct{})}
	if ln := (fdbudget.Budget{}).Listen(inner); ln != net.Listener(inner) {
		t.Fatalf("wrapped: %T", ln)
	}
}

func TestLimitAndOpen(t *testing.T) {
	t.Parallel()
	soft, hard, err := fdbudget.Limit()
	if err != nil {
		t.Fatal(err)
	}
	if soft != hard && hard != 0 {
		t.Errorf("soft limit %d not raised to the hard one %d", soft, hard)
	}
	if n := fdbudget.Open(); n == 0 || (soft > 0 && n > soft) {
		t.Errorf("open descriptors: %d (limit %d)", n, soft)
	}
}

// A TCP connection handed out still half-closes, as net/http needs to
// answer a request it did not read and close without a reset.
func TestConnCloseWrite(t *testing.T) {
	t.Parallel()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := fdbudget.Budget{Limit: 100, Conns: 1, Overflow: 1}.Listen(inner)
	defer ln.Close()
	client, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok {
		t.Fatalf("%T cannot half-close", c)
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if n, err := client.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("the client read %d bytes, %v; want the end of the stream", n, err)
	}
}
