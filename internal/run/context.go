package run

import (
	"context"
	"errors"
	"slices"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/compaction"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// withCompaction is the context a run's engine gets: the conversation's
// compacted summary and the messages after it, in place of the archived ones.
// With automatic compaction on, a new turn whose context would exceed the
// limit compacts first. A new run announces each compaction it is the first
// to use with a context.patch event.
func (s *Service) withCompaction(ctx context.Context, sc chat.Scope, conv, runID string, x *execution, history []chat.Message, announce bool) []chat.Message {
	c := s.cfg.Compactor
	if c == nil {
		return history
	}
	k, err := c.Latest(ctx, sc, conv)
	if err != nil {
		x.log.Warn("read compaction; sending the whole history", "conversation_id", conv, "err", err)
		return history
	}
	if k.ID != "" && !slices.ContainsFunc(history, func(m chat.Message) bool { return m.ID == k.ThroughID }) {
		k = store.Compaction{} // a summary of another branch: this one is whole
	}
	if limit := c.ContextTokens(); announce && limit > 0 && compaction.Estimate(compaction.Apply(history, k)) > limit {
		nk, err := c.Compact(ctx, sc, conv, runID)
		var nn *compaction.NotNeededError
		switch {
		case err == nil:
			k = nk
		case errors.As(err, &nn):
		default:
			x.log.Warn("automatic compaction failed; sending the whole context", "conversation_id", conv, "err", err)
		}
	}
	if k.ID == "" {
		return history
	}
	if announce && !usedBefore(history, k, runID) {
		x.Emit(ctx, event.Event{Step: "worker", Payload: event.ContextPatchData{Patch: compaction.Patch(k)}})
	}
	return compaction.Apply(history, k)
}

// usedBefore reports whether an earlier run already answered with the
// compaction in its context (it stored a message after the compaction).
func usedBefore(history []chat.Message, k store.Compaction, runID string) bool {
	for _, m := range history {
		if m.RunID != runID && compaction.Since(k, m.CreatedAt) {
			return true
		}
	}
	return false
}
