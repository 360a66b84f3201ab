package transport

import (
	"context"
	"net"
	"slices"
	"sync"
	"time"
)

// host is the connections to one address.
type host struct {
	t    *Transport
	addr string

	mu   sync.Mutex
	open int     // connections open or being dialled: the slots taken
	idle []*conn // most recently used last
	// wait is the calls waiting for a slot, first come first served. A
	// waiter is handed a connection, or nil: a slot to dial with.
	wait []chan *conn
}

// get returns a connection for one request: an idle one, a new one, or,
// when the host has MaxConnsPerHost open, the first to come free.
func (h *host) get(ctx context.Context) (*conn, error) {
	h.mu.Lock()
	if n := len(h.idle); n > 0 {
		c := h.idle[n-1]
		h.idle[n-1] = nil
		h.idle = h.idle[:n-1]
		h.mu.Unlock()
		return h.reuse(ctx, c)
	}
	if h.t.maxConns <= 0 || h.open < h.t.maxConns {
		h.open++
		h.mu.Unlock()
		return h.dial(ctx)
	}
	ch := make(chan *conn, 1)
	h.wait = append(h.wait, ch)
	h.mu.Unlock()
	select {
	case c := <-ch:
		if c == nil {
			return h.dial(ctx)
		}
		return h.reuse(ctx, c)
	case <-ctx.Done():
		h.mu.Lock()
		i := slices.Index(h.wait, ch)
		if i >= 0 {
			h.wait = slices.Delete(h.wait, i, i+1)
		}
		h.mu.Unlock()
		if i < 0 { // handed something meanwhile: pass it on
			if c := <-ch; c != nil {
				h.put(c)
			} else {
				h.release()
			}
		}
		return nil, ctx.Err()
	}
}

// reuse returns c, an idle connection now in the caller's hands, if the
// server has not closed it meanwhile, else a new connection in its slot.
func (h *host) reuse(ctx context.Context, c *conn) (*conn, error) {
	if c.timer != nil {
		c.timer.Stop() // if it fired, expire finds c gone from idle and leaves it
	}
	if t := c.tail; t != nil {
		// The last body's end, left by CloseAtEnd: it has come in by now,
		// or the connection is not to be used.
		c.tail = nil
		if !readRest(c.nc, t, t.buffered()) || t.buffered() {
			c.nc.Close()
			return h.dial(ctx)
		}
	}
	if alive(c.nc) {
		c.reused = true
		return c, nil
	}
	c.nc.Close()
	return h.dial(ctx)
}

// dial opens a connection in a slot the caller holds; on failure the slot
// is released.
func (h *host) dial(ctx context.Context) (*conn, error) {
	raw, err := h.t.dial(ctx, "tcp", h.addr)
	if err != nil {
		h.release()
		return nil, err
	}
	return &conn{h: h, nc: raw}, nil
}

// put gives back a connection whose response was read to its end: to the
// first waiter, else to the idle list (closed if that is full).
func (h *host) put(c *conn) {
	h.mu.Lock()
	if ch := h.firstWaiter(); ch != nil {
		h.mu.Unlock()
		ch <- c
		return
	}
	if len(h.idle) >= h.t.maxIdle {
		h.open--
		h.mu.Unlock()
		c.nc.Close()
		return
	}
	h.idle = append(h.idle, c)
	if d := h.t.idleTimeout; d > 0 {
		// A timer, not a goroutine: an idle connection waits on nothing.
		if c.timer == nil {
			c.timer = time.AfterFunc(d, func() { h.expire(c) })
		} else {
			c.timer.Reset(d)
		}
	}
	h.mu.Unlock()
}

// firstWaiter takes the first call waiting for a slot off the queue: its
// channel, nil if none waits. h.mu is held.
func (h *host) firstWaiter() chan *conn {
	if len(h.wait) == 0 {
		return nil
	}
	ch := h.wait[0]
	h.wait = slices.Delete(h.wait, 0, 1)
	return ch
}

// release frees the slot of a connection that was closed or never opened:
// it goes to the first waiter, who dials with it.
func (h *host) release() {
	h.mu.Lock()
	if ch := h.firstWaiter(); ch != nil {
		h.mu.Unlock()
		ch <- nil
		return
	}
	h.open--
	h.mu.Unlock()
}

// expire closes c if it is still idle after IdleConnTimeout.
func (h *host) expire(c *conn) {
	h.mu.Lock()
	i := slices.Index(h.idle, c)
	if i < 0 {
		h.mu.Unlock()
		return
	}
	h.idle = slices.Delete(h.idle, i, i+1)
	h.open--
	h.mu.Unlock()
	c.nc.Close()
}

// closeIdle closes the idle connections.
func (h *host) closeIdle() {
	h.mu.Lock()
	idle := h.idle
	h.idle = nil
	h.open -= len(idle)
	h.mu.Unlock()
	for _, c := range idle {
		if c.timer != nil {
			c.timer.Stop()
		}
		c.nc.Close()
	}
}

// conn is one connection to a host.
type conn struct {
	h      *host
	nc     net.Conn // the TCP connection
	timer  *time.Timer
	reused bool // it served a request before this one
	// tail is the last body's reader, when the body's end is still to be
	// read: the connection went back to the pool by CloseAtEnd
	// (roundtrip.go). Guarded as idle is.
	tail *chunked
}
