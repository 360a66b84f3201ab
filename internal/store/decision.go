package store

import (
	"fmt"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
)

// ApplyDecision applies the rule "exactly one decision wins" to c, so that
// every backend decides the same way. It reports whether c changed (and must be
// written) and the outcome: nil when d is, or already was, the decision;
// ErrExpired when c can no longer be decided (c becomes expired if it was
// pending); ErrConflict when another decision was recorded first.
func ApplyDecision(c *chat.Confirmation, d chat.Decision) (changed bool, err error) {
	at := d.At.UTC().Truncate(time.Millisecond)
	switch {
	case c.Status == chat.ConfirmPending && at.After(c.ExpiresAt):
		c.Status, c.DecidedAt = chat.ConfirmExpired, &at
		return true, ErrExpired
	case c.Status == chat.ConfirmPending:
		c.Status, c.DecidedArgs, c.Reason, c.DecidedAt = d.Status, d.Args, d.Reason, &at
		return true, nil
	case c.Status == chat.ConfirmExpired:
		return false, ErrExpired
	case c.Status == chat.ConfirmCancelled:
		return false, ErrRunEnded
	case c.Status == d.Status:
		return false, nil
	default:
		return false, fmt.Errorf("%w: already %s", ErrConflict, c.Status)
	}
}
