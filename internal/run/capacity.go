package run

import (
	"errors"
	"sync/atomic"
)

// ErrOverloaded: this process already executes as many runs as it may
// (Config.MaxExecutions); the client should try again shortly.
var ErrOverloaded = errors.New("server is at capacity")

// capacity counts the executions running in this process against
// Config.MaxExecutions (0: no bound). A new run takes a place only while
// one is free (tryTake). An execution the service owes (a continuation
// after a decision, a cancel, a takeover) takes one regardless (take): it
// may run over the bound, because refusing it would drop a decision
// already made, and the bound is set with a reserve that absorbs it.
type capacity struct {
	max int64
	n   atomic.Int64
}

func (c *capacity) tryTake() bool {
	if n := c.n.Add(1); c.max > 0 && n > c.max {
		c.n.Add(-1)
		return false
	}
	return true
}

func (c *capacity) take() { c.n.Add(1) }
func (c *capacity) give() { c.n.Add(-1) }
