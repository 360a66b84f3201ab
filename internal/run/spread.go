package run

import (
	"context"
	"sync/atomic"
)

// spread hangs per-run contexts from several children of a shared context
// rather than from the context itself. A context keeps its children (and
// its AfterFunc callbacks) in a map under one lock, taken when each is
// added and again when it is let go: every run's start and end passed the
// service's, its term's and its halt's, and a burst of starts queued on
// those locks, handed from one goroutine to the next (the mutex profile of
// a thousand streams: tens to hundreds of seconds of waiting in
// context.AfterFunc; docs/benchmarks.md, "seventh round"). A child ends
// with its parent, with the parent's cause.
type spread struct {
	next    atomic.Uint32
	ctxs    [spreadWays]context.Context
	cancels [spreadWays]context.CancelFunc // let go with the parent; kept for vet
}

// spreadWays is how many children a spread has: as many locks as the event
// log has shards, enough that a burst of starts seldom meets on one.
const spreadWays = logShards

func newSpread(parent context.Context) *spread {
	s := &spread{}
	for i := range s.ctxs {
		s.ctxs[i], s.cancels[i] = context.WithCancel(parent)
	}
	return s
}

// pick is one of the children, in turn.
func (s *spread) pick() context.Context {
	return s.ctxs[s.next.Add(1)%spreadWays]
}
