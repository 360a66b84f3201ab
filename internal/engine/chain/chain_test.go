package chain

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/engine/local"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/llm/scripted"
	"github.com/agentchat/agentchat/internal/tool"
	"github.com/agentchat/agentchat/internal/tool/builtin"
)

// host records what an execution emits and stores.
type host struct {
	mu  sync.Mutex
	evs []event.Event
}

func (h *host) Emit(_ context.Context, ev event.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.evs = append(h.evs, ev)
}

func (h *host) AppendMessage(_ context.Context, m chat.Message) (chat.Message, error) {
	if m.ID == "" {
		m.ID = chat.NewID()
	}
	return m, nil
}

func (h *host) RequestConfirmation(_ context.Context, c chat.Confirmation) (chat.Confirmation, error) {
	c.ID = chat.NewID()
	return c, nil
}

// UpdateState patches an empty state: these runs keep none.
func (h *host) UpdateState(_ context.Context, patch json.RawMessage) (json.RawMessage, error) {
	next, _, err := chat.PatchState(nil, patch)
	return next, err
}

func (h *host) steps() []string {
	var out []string
	for _, ev := range h.evs {
		if p, ok := ev.Payload.(event.StepStartedData); ok {
			out = append(out, p.Name)
		}
	}
	return out
}

func newEngine(t *testing.T, hard int) *Engine {
	t.Helper()
	reg, err := tool.NewRegistry(tool.RegistryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := builtin.Register(reg, builtin.Config{}); err != nil {
		t.Fatal(err)
	}
	model := scripted.New(scripted.Config{TokenDelay: -1})
	return New(Config{Model: model, Tools: reg, Executor: local.New(local.Config{Model: model, Tools: reg}), HardLimit: hard})
}

func task(input string, maxSteps int) engine.Task {
	return engine.Task{
		Run:     chat.Run{ID: "run-1", Input: input},
		History: []chat.Message{{Role: chat.RoleUser, Content: input}},
		Options: engine.Options{MaxSteps: maxSteps},
	}
}

// TestPlanSchema: mcp_config may name only what is configured.
func TestPlanSchema(t *testing.T) {
	t.Parallel()
	e := newEngine(t, 0)
	r := &runner{e: e}
	v, err := tool.NewValidator(r.planSchema())
	if err != nil {
		t.Fatal(err)
	}
	plan := func(mcp string) json.RawMessage {
		return json.RawMessage(`{"execution_chain":["executor","check"],"mcp_config":` + mcp + `,"instructions":"x"}`)
	}
	for _, ok := range []string{`[]`, `["builtin"]`, `["calculator","http_get"]`} {
		if err := v.Check(plan(ok)); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	for _, bad := range []string{`[{"command":"sh"}]`, `[{"url":"http://203.0.113.7"}]`, `["mcp:evil"]`, `["rm -rf /"]`, `["builtin","builtin"]`} {
		if err := v.Check(plan(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if err := v.Check(json.RawMessage(`{"execution_chain":["check"],"mcp_config":[],"instructions":"x"}`)); err == nil {
		t.Error("a chain without executor accepted")
	}
	if got := r.resolve([]string{"calculator"}); !slices.Equal(got, []string{"calculator"}) {
		t.Errorf("resolve %v", got)
	}
	if got := r.resolve([]string{"builtin"}); len(got) < 5 {
		t.Errorf("builtin resolves to %v", got)
	}
	// An agent's tool subset is the most a plan may select.
	limited := &runner{e: e, t: engine.Task{Agent: &engine.Agent{Tools: &engine.AllowedTools{Names: []string{"calculator"}}}}}
	lv, err := tool.NewValidator(limited.planSchema())
	if err != nil {
		t.Fatal(err)
	}
	if err := lv.Check(plan(`["http_get"]`)); err == nil {
		t.Error("a plan selected a tool outside the agent's subset")
	}
	if got := limited.resolve([]string{"builtin"}); !slices.Equal(got, []string{"calculator"}) {
		t.Errorf("builtin resolves to %v for an agent limited to calculator", got)
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		input     string
		maxSteps  int
		hard      int
		steps     []string
		answer    string
		limitText bool
	}{
		{"only the planner fits", "calculate 2+2", 1, 0, []string{"planner"}, LimitText(1), true},
		{"default steps, check passes", "calculate 2+2", 0, 0, []string{"planner", "executor", "check"}, "The result is 2+2 = 4.", false},
		{"the hard limit caps max_steps", "calculate 2+2 and always fail check", 100, 4,
			[]string{"planner", "executor", "check", "executor"}, "The result is 2+2 = 4.", false},
		{"a failing check loops to the default limit", "calculate 2+2, always fail check", 0, 0,
			[]string{"planner", "executor", "check", "executor", "check", "executor"}, "The result is 2+2 = 4.", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := &host{}
			o := newEngine(t, tt.hard).Execute(context.Background(), task(tt.input, tt.maxSteps), h)
			if o.Status != engine.StatusSucceeded || o.Answer == nil || o.Answer.Answer != tt.answer {
				t.Fatalf("outcome %+v", o)
			}
			if got := h.steps(); !slices.Equal(got, tt.steps) {
				t.Errorf("steps %v, want %v", got, tt.steps)
			}
			for _, ev := range h.evs {
				if ev.Step == "worker" {
					t.Errorf("an executor event kept the step worker: %v", ev.Type)
				}
			}
			if tt.limitText != strings.Contains(o.Answer.Answer, "已达到最大步数限制") {
				t.Errorf("answer %q", o.Answer.Answer)
			}
		})
	}
}

// TestPauseAndResume: a confirmation pauses the chain with its progress
// around the executor's state; resuming continues the same pass.
func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	e := newEngine(t, 0)
	h := &host{}
	tk := task(`send a webhook saying "hi"`, 0)
	o := e.Execute(context.Background(), tk, h)
	if o.Status != engine.StatusAwaiting || len(o.Announce) != 1 || o.Announce[0].Step != StepExecutor {
		t.Fatalf("outcome %+v", o)
	}
	var st state
	if err := json.Unmarshal(o.State, &st); err != nil || st.Plan == nil || st.Steps != 2 || len(st.Executor) == 0 {
		t.Fatalf("state %s", o.State)
	}
	aw := o.Announce[0].Payload.(event.ToolAwaitingData)
	tk.Run.State = o.State
	tk.Options = engine.Options{}
	tk.Resume = &engine.Resume{Confirmation: chat.Confirmation{ID: aw.ConfirmationID, ToolCallID: aw.ToolCallID, ToolName: aw.Name, Args: aw.Args, Status: chat.ConfirmRejected}}
	h2 := &host{}
	o = e.Execute(context.Background(), tk, h2)
	if o.Status != engine.StatusSucceeded || o.Answer == nil || o.Answer.Answer != "Okay, I did not send it." {
		t.Fatalf("resumed %+v", o)
	}
	if got := h2.steps(); !slices.Equal(got, []string{"check"}) {
		t.Errorf("steps after resume %v", got)
	}
	tk.Run.State = json.RawMessage(`{}`)
	if o := e.Execute(context.Background(), tk, &host{}); o.Status != engine.StatusFailed {
		t.Errorf("a bad state resumed: %+v", o)
	}
}
