package engine

import (
	"context"
	"fmt"

	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/telemetry"
)

// Router is the Engine every run passes through: it picks the engine that
// executes the run and brackets the work in steps, "router" (the choice)
// then "worker" (the execution), so clients that show stages (seed 004) can.
//
// The choice, first match wins: the request's engine (Options.Engine), the
// conversation's pinned engine, the agent's engine, the tenant's default,
// the router's default.
type Router struct {
	Engines map[string]Engine
	// TenantDefaults maps a tenant to its default engine name.
	TenantDefaults map[string]string
	// Default is the engine when nothing else names one.
	Default string
}

// Choose names the engine for t. A paused run continues on the engine that
// paused it (its stored state is that engine's), when the run names one.
func (r *Router) Choose(t Task) (string, error) {
	agent := ""
	if t.Agent != nil {
		agent = t.Agent.Engine
	}
	names := []string{t.Options.Engine, t.Conversation.Engine, agent, t.Run.Engine, r.TenantDefaults[t.Scope.Tenant], r.Default}
	if t.Resume != nil && t.Run.Engine != "" {
		names = append([]string{t.Run.Engine}, names...)
	}
	for _, name := range names {
		if name == "" {
			continue
		}
		if _, ok := r.Engines[name]; !ok {
			return "", fmt.Errorf("unknown engine %q", name)
		}
		return name, nil
	}
	return "", fmt.Errorf("no engine configured")
}

// Execute routes t and runs it on the chosen engine.
func (r *Router) Execute(ctx context.Context, t Task, h Host) Outcome {
	var o Outcome
	r.ExecuteTask(ctx, &t, h, &o)
	return o
}

// ExecuteTask is Execute with t by pointer (TaskExecutor).
//
//go:noinline
func (r *Router) ExecuteTask(ctx context.Context, t *Task, h Host, o *Outcome) {
	name, failed := r.route(ctx, t, h)
	if failed != nil {
		*o = *failed
		return
	}
	Execute(ctx, r.Engines[name], t, h, o)
	if o.Status != StatusAwaiting {
		step(ctx, h, event.StepFinishedData{Name: "worker"}, "worker")
	}
}

// route chooses t's engine and announces it, or returns the Outcome that
// ends the run. Its frame and step's are not under the engine's, which
// waits for every token of the run: the run's stack is meant to stay at
// 8 KiB (docs/benchmarks.md, issue 25, eighth round: run stacks).
//
//go:noinline
func (r *Router) route(ctx context.Context, t *Task, h Host) (string, *Outcome) {
	step(ctx, h, event.StepStartedData{Name: "router"}, "router")
	name, err := r.choose(t)
	step(ctx, h, event.StepFinishedData{Name: "router"}, "router")
	if err != nil {
		return "", &Outcome{Status: StatusFailed, Error: &event.ErrorInfo{Code: errcode.EngineUnavailable, Message: "No engine can run this request: " + err.Error()}}
	}
	telemetry.SetEngine(ctx, name)
	step(ctx, h, event.StepStartedData{Name: "worker"}, "worker")
	return name, nil
}

// step announces a router step.
//
//go:noinline
func step(ctx context.Context, h Host, p event.Payload, name string) {
	h.Emit(ctx, event.Event{Step: name, Payload: p})
}

// choose is Choose, its copy of t in a frame of its own.
//
//go:noinline
func (r *Router) choose(t *Task) (string, error) { return r.Choose(*t) }

// Has reports whether the router can run an engine of that name.
func (r *Router) Has(name string) bool {
	_, ok := r.Engines[name]
	return ok
}
