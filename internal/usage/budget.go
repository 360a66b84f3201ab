package usage

import (
	"context"
	"fmt"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// Check says whether run, having used used so far, may make another
// model call at now: every token and cost budget in force for it must
// hold the usage recorded in its window plus the run's own. Runs limits
// are not checked here: they count starts, not calls. Other runs of the
// tenant executing meanwhile are counted when they end.
func (l *Limits) Check(ctx context.Context, st store.Usage, run chat.Run, used event.Usage, now time.Time) (*Refusal, error) {
	if l == nil {
		return nil, nil
	}
	for _, lim := range l.For(run.Tenant, run.Owner, run.AgentID).StoreLimits(run.Tenant, run.Owner, run.AgentID, now) {
		if lim.Runs() {
			continue
		}
		rep, err := st.SumUsage(ctx, store.UsageQuery{Tenant: run.Tenant, User: lim.User, AgentID: lim.AgentID, From: lim.Since})
		if err != nil {
			return nil, fmt.Errorf("check %s: %w", lim.Kind, err)
		}
		spent, mine := rep.Total.InputTokens+rep.Total.OutputTokens, int64(used.TotalTokens())
		if lim.Cost() {
			spent, mine = rep.Total.Cost, used.Cost
		}
		if spent+mine >= lim.Max {
			return &Refusal{Code: errcode.QuotaExceeded, Limit: lim, Used: spent + mine, Reset: lim.Reset, At: now}, nil
		}
	}
	return nil, nil
}
