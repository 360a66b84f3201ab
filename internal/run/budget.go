package run

import (
	"context"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/event"
)

// now is the service's clock (Config.Now).
func (s *Service) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now().UTC().Truncate(time.Millisecond)
	}
	return time.Now().UTC().Truncate(time.Millisecond)
}

// budget is the check a running run makes between its model calls: its
// token and cost budgets against the usage recorded plus its own. A store
// that cannot answer lets the call go (the start was checked; the next
// start counts this run).
func (s *Service) budget(r chat.Run) engine.Budget {
	if s.cfg.Limits == nil {
		return nil
	}
	return func(ctx context.Context, used event.Usage) *event.ErrorInfo {
		now := s.now()
		refusal, err := s.cfg.Limits.Check(ctx, s.st, r, used, now)
		if err != nil {
			s.log.Warn("check the run's budgets", "run_id", r.ID, "err", err)
			return nil
		}
		if refusal == nil {
			return nil
		}
		return &event.ErrorInfo{Code: refusal.Code, Message: "The run stopped: " + refusal.Message(now) + "."}
	}
}
