package run

import (
	"sync"
	"time"

	"github.com/agentchat/agentchat/internal/telemetry"
)

// continuationTTL is how long a continuation no resume took is kept (its
// run was cancelled, or ended by the decision's expiry): far longer than a
// resume takes, even one the sweep applies after the deciding replica died.
const continuationTTL = time.Hour

// continuation is what a decision's request leaves for the resume that
// applies the decision, whichever resume that is (the request's own, or the
// pausing execution's when the decision came while its run was pausing):
// the run id its client chose (DecideFor) and its span, which the
// continuation's span links.
type continuation struct {
	clientRunID, status string
	cause               telemetry.Cause
	at                  time.Time // when it was decided; the sweep expires it from there
}

// continuations maps a confirmation id to its continuation. A decision
// stores one, and the resume that continues the run reads it and drops it
// once its claim won, in constant time; the sweep loop expires those nobody
// took. Safe for concurrent use.
type continuations struct {
	mu sync.Mutex
	m  map[string]continuation
}

func (c *continuations) put(confirmationID string, v continuation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]continuation{}
	}
	c.m[confirmationID] = v
}

// get returns the continuation of a confirmation.
func (c *continuations) get(confirmationID string) (continuation, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[confirmationID]
	return v, ok
}

func (c *continuations) drop(confirmationID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, confirmationID)
}

// expire drops the continuations decided before before and returns how many.
func (c *continuations) expire(before time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for id, v := range c.m {
		if v.at.Before(before) {
			delete(c.m, id)
			n++
		}
	}
	return n
}

func (c *continuations) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
