// Package fdbudget sizes what a server takes on by the file descriptors it
// may open. Each chat holds two while it streams (the client's connection
// and the model provider's), every other client connection one, and the
// store, the bus, listeners, logs and tools need some of their own. A
// process that runs out (EMFILE) fails in the worst places: the model
// cannot be dialed, SQLite cannot open a connection, and the listener
// cannot accept, so clients sit in the kernel's accept queue with no
// answer while net/http retries.
//
// Plan divides the open-files limit (RLIMIT_NOFILE, which Go raises to the
// hard limit at start) into a reserve, client connections and executing
// runs. Listener keeps the connections within their share: a connection
// beyond it, up to an overflow taken from the reserve, is still accepted and
// marked (Overflowed), so the server answers it at once (503 overloaded,
// Retry-After) and closes it; only past the overflow does Accept wait, and
// then only for one of those quick answers to finish. The run service keeps
// the executing runs within theirs and refuses a new run beyond it. Neither
// the listener nor the model's connections can then reach EMFILE while the
// reserve holds, which is what keeps accept from failing.
//
// Invariants: Plan is a pure function; Listener is safe for concurrent
// use, counts a connection from Accept until its first Close, and never
// holds more than Conns+Overflow connections open.
package fdbudget

import (
	"context"
	"net"
	"sync"
)

// Budget is a plan for a process's file descriptors. A zero Budget (limit
// unknown or unlimited) bounds nothing.
type Budget struct {
	// Limit is the open-files limit (soft, after raising it to the hard
	// one), Hard the hard limit; 0 when unknown or unlimited.
	Limit, Hard int
	// Open is how many descriptors were open when the plan was made.
	Open int
	// Reserve is kept for what the plan does not count: the store's and the
	// bus's pools, listeners, logs, DNS, tools and other hosts' calls; the
	// overflow answers come out of it.
	Reserve int
	// Conns bounds the client connections served at once; Overflow more are
	// accepted only to be told the server is overloaded.
	Conns, Overflow int
	// Runs bounds the runs executing at once, each with its connection to
	// the model provider.
	Runs int
}

// Bounded reports whether the budget bounds anything.
func (b Budget) Bounded() bool { return b.Limit > 0 }

// DefaultReserve is the reserve for a limit: a sixteenth, and at least 64.
func DefaultReserve(limit int) int { return max(64, limit/16) }

// Plan divides limit among open (already in use), reserve, client
// connections and executing runs. runs, when positive, is the executing
// runs wanted; Plan gives fewer when the limit leaves no room for them (the
// caller compares, and warns). Otherwise each run is paired with a client
// connection: a chat needs one of each.
func Plan(limit, hard, open, reserve, runs int) Budget {
	b := Budget{Limit: limit, Hard: hard, Open: open, Reserve: reserve}
	if limit <= 0 {
		return Budget{Hard: hard, Open: open}
	}
	free := max(limit-open-reserve, 2)
	switch {
	case runs <= 0:
		b.Runs = free / 2
	default:
		b.Runs = min(runs, free-1)
	}
	b.Conns = free - b.Runs
	b.Overflow = max(4, reserve/4)
	return b
}

// Listener bounds the connections a net.Listener hands out by a Budget.
type Listener struct {
	net.Listener
	conns int           // connections served as usual
	slots chan struct{} // one per open connection, served or overflowing
	done  chan struct{}
	once  sync.Once

	mu   sync.Mutex
	open int // connections served as usual now
}

// Listen wraps ln. A zero Budget leaves it unbounded.
func (b Budget) Listen(ln net.Listener) net.Listener {
	if !b.Bounded() {
		return ln
	}
	return &Listener{Listener: ln, conns: b.Conns, slots: make(chan struct{}, b.Conns+b.Overflow), done: make(chan struct{})}
}

// Accept waits for a slot, then for a connection. A connection beyond
// Conns is marked as overflowing: the server answers it and closes it.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	l.mu.Lock()
	over := l.open >= l.conns
	if !over {
		l.open++
	}
	l.mu.Unlock()
	return &conn{Conn: c, l: l, over: over}, nil
}

// Close closes the listener and ends a wait in Accept.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// Served is how many connections are being served as usual (for tests and metrics).
func (l *Listener) Served() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

type conn struct {
	net.Conn
	l     *Listener
	over  bool
	close sync.Once
}

// CloseWrite half-closes a TCP connection, as net/http does before closing
// one whose request body it did not read (a 503 to a POST): the client
// then reads the answer instead of a reset.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// NetConn is the connection it wraps, for a server that watches a hijacked
// connection's socket itself (httpapi's parked streams).
func (c *conn) NetConn() net.Conn { return c.Conn }

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.close.Do(func() {
		if !c.over {
			c.l.mu.Lock()
			c.l.open--
			c.l.mu.Unlock()
		}
		<-c.l.slots
	})
	return err
}

type overflowKey struct{}

// ConnContext is an http.Server's ConnContext: it marks the requests of an
// overflowing connection, for Overflowed.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if oc, ok := c.(*conn); ok && oc.over {
		return context.WithValue(ctx, overflowKey{}, true)
	}
	return ctx
}

// Overflowed reports whether the request came on a connection beyond the
// budget: the server should answer it with 503 and close the connection.
func Overflowed(ctx context.Context) bool {
	v, _ := ctx.Value(overflowKey{}).(bool)
	return v
}
