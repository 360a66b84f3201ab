// Package chain is the chain engine (seed 003): a planner writes a plan, an
// executor carries it out, a checker judges the result, and the executor
// runs again with the checker's reasoning until the check passes or the
// steps run out.
//
// Every step starts with step.started (planner, executor, check) and ends
// with step.finished. The planner's WorkflowPlan and the checker's
// CheckOutput are structured model answers: the model is asked for JSON
// (the provider's JSON mode) with the JSON Schema in its prompt, and the
// answer is validated against the schema here; an invalid one is retried
// once with the validation message, then the run fails. They are emitted as
// plan and check events. The executor is the local agent loop, given the
// plan's instructions and only the tools the plan selected; its events are
// re-labelled with the step "executor".
//
// A run's agent (engine.Task.Agent) gives the chain its model, for every
// step, and its tool subset, the most a plan may select; its instructions
// are the planner's, the executor's and the checker's context.
//
// A plan's mcp_config selects tools only by name among what the operator
// configured: "builtin" (every built-in tool), "mcp:<server>" (every tool
// of a configured MCP server) or one tool's name. The schema enumerates
// exactly those names, so a plan that asks to start a command or reach a
// URL is invalid, never obeyed.
//
// Limits: the run's Options.MaxSteps (default 6), never above HardLimit;
// each step counts one. When the limit stops the chain with a usable result
// (an executor's answer), that is the answer; without one, the answer is a
// text that names the limit.
//
// A tool that needs a person pauses the executor; the chain stores its own
// progress around the executor's state, and the continuation after the
// decision goes on from the same step, on any replica.
package chain

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/engine/local"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/prompt"
	"github.com/agentchat/agentchat/internal/telemetry"
	"github.com/agentchat/agentchat/internal/tool"
)

// Step names.
const (
	StepPlanner  = "planner"
	StepExecutor = "executor"
	StepCheck    = "check"
)

// Defaults.
const (
	DefaultMaxSteps  = 6
	DefaultHardLimit = 20
)

// Schema names, as the model is told them (llm.OutputSchema.Name).
const (
	SchemaPlan  = "WorkflowPlan"
	SchemaCheck = "CheckOutput"
)

// WorkflowPlan is the planner's answer (seed 003 planner.plan).
type WorkflowPlan struct {
	ExecutionChain []string `json:"execution_chain"`
	MCPConfig      []string `json:"mcp_config"`
	Instructions   string   `json:"instructions"`
}

// CheckOutput is the checker's verdict (seed 003 check.summary).
type CheckOutput struct {
	Judge           bool             `json:"judge"`
	Score           float64          `json:"score"`
	Reasoning       string           `json:"reasoning"`
	ToolAssessments []ToolAssessment `json:"tool_assessments"`
}

// ToolAssessment is the checker's word on one tool call.
type ToolAssessment struct {
	Name       string `json:"name"`
	Status     string `json:"status,omitempty"`
	Assessment string `json:"assessment,omitempty"`
}

// Config configures the chain engine.
type Config struct {
	// Model plays planner and checker.
	Model llm.Model
	// Tools are what a plan may select from.
	Tools *tool.Registry
	// Executor runs the plan: the local agent loop, given Options.Allowed
	// and the instructions as context.
	Executor engine.Engine
	// HardLimit caps any run's MaxSteps (CHAIN_HARD_LIMIT). Default 20.
	HardLimit int
	// SystemPrompt, when set, comes first in the planner's and checker's prompts.
	SystemPrompt string
	Logger       *slog.Logger
}

// Engine is the chain engine. It is safe for concurrent runs.
type Engine struct {
	model  llm.Model
	tools  *tool.Registry
	exec   engine.Engine
	hard   int
	system string
	log    *slog.Logger
}

var _ engine.Engine = (*Engine)(nil)

// New returns the chain engine.
func New(cfg Config) *Engine {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Engine{model: cfg.Model, tools: cfg.Tools, exec: cfg.Executor, hard: cmp.Or(max(cfg.HardLimit, 0), DefaultHardLimit),
		system: cfg.SystemPrompt, log: log}
}

// LimitText is the final text of a chain that reached its step limit
// without a usable result (seed 003 上限与提示).
func LimitText(n int) string {
	return fmt.Sprintf("已达到最大步数限制（%d），未得到有效结果。The chain reached its step limit (%d) without a usable result; ask again with a larger max_steps or a narrower request.", n, n)
}

// state is a chain's progress, stored while its executor waits for a person.
type state struct {
	MaxSteps int           `json:"maxSteps"`
	Steps    int           `json:"steps"` // steps started
	Plan     *WorkflowPlan `json:"plan,omitempty"`
	Attempt  int           `json:"attempt"`            // executor passes started
	Feedback string        `json:"feedback,omitempty"` // the last failed check's reasoning
	Result   string        `json:"result,omitempty"`   // the last executor answer
	Usage    event.Usage   `json:"usage"`              // of finished model calls and passes
	// Calls are the tool calls of the current executor pass, for the check.
	Calls []toolCall `json:"calls,omitempty"`
	// Executor is the paused executor's own state.
	Executor json.RawMessage `json:"executor,omitempty"`
}

// toolCall is one finished call of an executor pass, as the checker sees it.
type toolCall struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Input  string `json:"input"`
	Output string `json:"output"`
}

type runner struct {
	e   *Engine
	t   engine.Task
	h   engine.Host
	log *slog.Logger // lines about the run: they carry its run_id and trace_id
	st  state
	mu  sync.Mutex // guards st.Calls: parallel tool calls record concurrently
}

// Execute runs or resumes a chain.
func (e *Engine) Execute(ctx context.Context, t engine.Task, h engine.Host) engine.Outcome {
	r := &runner{e: e, t: t, h: h, log: telemetry.RunLogger(e.log, t.Run)}
	resuming := t.Resume != nil
	if resuming {
		if err := json.Unmarshal(t.Run.State, &r.st); err != nil || r.st.Plan == nil {
			return failed(errcode.ResumeFailed, "The paused chain's state could not be read.", event.Usage{})
		}
	} else {
		r.st.MaxSteps = min(cmp.Or(max(t.Options.MaxSteps, 0), DefaultMaxSteps), e.hard)
	}
	if r.st.Plan == nil {
		if !r.begin(ctx, StepPlanner) {
			return r.limit(ctx)
		}
		plan, o := r.plan(ctx)
		if o != nil {
			return *o
		}
		r.st.Plan = plan
		r.finish(ctx, StepPlanner)
	}
	checks := slices.Contains(r.st.Plan.ExecutionChain, StepCheck)
	for {
		if !resuming {
			if !r.begin(ctx, StepExecutor) {
				return r.limit(ctx)
			}
			r.st.Attempt++
			r.st.Calls = nil
		}
		result, o := r.execute(ctx, resuming)
		resuming = false
		if o != nil {
			return *o
		}
		r.st.Result = result
		r.finish(ctx, StepExecutor)
		if !checks {
			// The plan asked for no check: the executor's answer is the
			// chain's, whatever it says (its last message is the final text).
			return r.done()
		}
		if !r.begin(ctx, StepCheck) {
			return r.limit(ctx)
		}
		verdict, o := r.check(ctx)
		if o != nil {
			return *o
		}
		r.finish(ctx, StepCheck)
		if verdict.Judge {
			return r.done()
		}
		r.st.Feedback = verdict.Reasoning
	}
}

// begin starts a step, or reports that the limit leaves none.
func (r *runner) begin(ctx context.Context, name string) bool {
	if o := engine.Stopped(ctx); o != nil || r.st.Steps >= r.st.MaxSteps {
		return false
	}
	r.st.Steps++
	r.h.Emit(ctx, event.Event{Step: name, Payload: event.StepStartedData{Name: name}})
	return true
}

func (r *runner) finish(ctx context.Context, name string) {
	r.h.Emit(ctx, event.Event{Step: name, Payload: event.StepFinishedData{Name: name}})
}

// limit ends a chain that has no step left (or no check to make): with the
// executor's result when there is one, else with the limit text.
func (r *runner) limit(ctx context.Context) engine.Outcome {
	if o := engine.Stopped(ctx); o != nil {
		o.Usage = r.st.Usage
		return *o
	}
	if strings.TrimSpace(r.st.Result) != "" {
		return r.done()
	}
	text := LimitText(r.st.MaxSteps)
	id := chat.NewID()
	answer := local.DeriveAnswer(text)
	answer.Status, answer.ResultType = "failed", "error_report"
	meta := chat.AssistantMeta{Answer: answer}.Marshal()
	if _, err := r.h.AppendMessage(ctx, chat.Message{ID: id, Role: chat.RoleAssistant, Content: text, Metadata: meta, RunID: r.t.Run.ID}); err != nil {
		r.log.Error("store chain limit message", "err", err)
	}
	r.h.Emit(ctx, event.Event{Payload: event.MessageCompletedData{MessageID: id, Role: chat.RoleAssistant, Content: text, Answer: answer}})
	return engine.Outcome{Status: engine.StatusSucceeded, Usage: r.st.Usage, Answer: answer}
}

func (r *runner) done() engine.Outcome {
	return engine.Outcome{Status: engine.StatusSucceeded, Usage: r.st.Usage, Answer: local.DeriveAnswer(r.st.Result)}
}

func failed(code, msg string, u event.Usage) engine.Outcome {
	return engine.Outcome{Status: engine.StatusFailed, Error: &event.ErrorInfo{Code: code, Message: msg}, Usage: u}
}

// fail reports a failure as an error event of the step, then ends the run.
func (r *runner) fail(ctx context.Context, step, code, msg string) *engine.Outcome {
	info := event.ErrorInfo{Code: code, Message: msg}
	r.h.Emit(ctx, event.Event{Step: step, Payload: event.ErrorData{ErrorInfo: info}})
	return &engine.Outcome{Status: engine.StatusFailed, Error: &info, Usage: r.st.Usage}
}

// execute runs (or resumes) one executor pass and returns its answer. A
// non-nil Outcome ends the chain: a pause, a failure, a cancel.
func (r *runner) execute(ctx context.Context, resuming bool) (string, *engine.Outcome) {
	t := r.t
	t.Options = engine.Options{Allowed: &engine.AllowedTools{Names: r.resolve(r.st.Plan.MCPConfig)}, Context: r.context()}
	if b := t.Budget; b != nil {
		// The executor counts its own calls; the run's budget, the plan's too.
		t.Budget = func(ctx context.Context, used event.Usage) *event.ErrorInfo { return b(ctx, r.st.Usage.Add(used)) }
		if !r.st.Usage.Empty() {
			if o := engine.OverBudget(ctx, r.t, r.st.Usage); o != nil {
				return "", o
			}
		}
	}
	if resuming {
		t.Run.State = r.st.Executor
	} else {
		t.Resume = nil
	}
	o := r.e.exec.Execute(ctx, t, stepHost{r.h, r})
	switch o.Status {
	case engine.StatusAwaiting:
		for i := range o.Announce {
			o.Announce[i].Step = StepExecutor
		}
		r.st.Executor = o.State
		r.mu.Lock()
		b, err := json.Marshal(r.st)
		r.mu.Unlock()
		if err != nil {
			return "", r.fail(ctx, StepExecutor, errcode.PauseFailed, "The chain could not be paused.")
		}
		o.State, o.Usage = b, r.st.Usage.Add(o.Usage)
		return "", &o
	case engine.StatusSucceeded:
		r.st.Executor = nil
		r.st.Usage = r.st.Usage.Add(o.Usage)
		if o.Answer == nil {
			return "", nil
		}
		return o.Answer.Answer, nil
	default:
		o.Usage = r.st.Usage.Add(o.Usage)
		return "", &o
	}
}

// context is what the executor is told beside the conversation: the plan's
// instructions and, on a later pass, the previous answer and why it failed
// the check.
func (r *runner) context() []chat.ContextItem {
	items := []chat.ContextItem{{Description: "instructions from the planner", Value: r.st.Plan.Instructions}}
	if r.st.Feedback != "" {
		items = append(items,
			chat.ContextItem{Description: "your previous answer", Value: r.st.Result},
			chat.ContextItem{Description: "why the check rejected it (fix this)", Value: r.st.Feedback})
	}
	return items
}

// stepHost labels the executor's events with the executor step and notes
// the pass's tool results for the check.
type stepHost struct {
	engine.Host
	r *runner
}

func (h stepHost) Emit(ctx context.Context, ev event.Event) {
	if ev.Step == "" || ev.Step == "worker" {
		ev.Step = StepExecutor
	}
	if p, ok := ev.Payload.(event.ToolResultData); ok {
		out := p.Content
		if out == "" {
			out = string(p.Output)
		}
		h.r.mu.Lock()
		h.r.st.Calls = append(h.r.st.Calls, toolCall{Name: p.Name, Status: p.Status, Input: string(p.Args), Output: out})
		h.r.mu.Unlock()
	}
	h.Host.Emit(ctx, ev)
}

// tools lists the registry's tools the run may use: its agent's subset.
func (r *runner) tools() []tool.Spec {
	if r.e.tools == nil {
		return nil
	}
	var agent *engine.AllowedTools
	if r.t.Agent != nil {
		agent = r.t.Agent.Tools
	}
	var out []tool.Spec
	for _, s := range r.e.tools.List() {
		if agent.Allows(s.Name) {
			out = append(out, s)
		}
	}
	return out
}

// selectors lists what a plan's mcp_config may name: "builtin", each
// configured MCP server as "mcp:<name>", and each tool by name, among the
// tools the run may use.
func (r *runner) selectors() []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, s := range r.tools() {
		add(s.Source) // "builtin" or "mcp:<server>"
		add(s.Name)
	}
	// A configured server whose tools are down is still a name to plan with,
	// unless an agent limits the run to tools by name.
	if r.e.tools != nil && (r.t.Agent == nil || r.t.Agent.Tools == nil) {
		for _, s := range r.e.tools.Servers() {
			add("mcp:" + s.Name)
		}
	}
	slices.Sort(out)
	return out
}

// resolve turns a plan's selectors into the names of tools the run may use.
func (r *runner) resolve(sel []string) []string {
	names := []string{}
	for _, s := range r.tools() {
		if slices.Contains(sel, s.Name) || slices.Contains(sel, s.Source) {
			names = append(names, s.Name)
		}
	}
	return names
}

// planSchema is the WorkflowPlan schema, with mcp_config limited to the
// names the run may select.
func (r *runner) planSchema() json.RawMessage {
	names := r.selectors()
	mcp := map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": names}, "uniqueItems": true}
	if len(names) == 0 {
		mcp = map[string]any{"type": "array", "maxItems": 0}
	}
	b, _ := json.Marshal(map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []string{"execution_chain", "mcp_config", "instructions"},
		"properties": map[string]any{
			"execution_chain": map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"enum": []string{StepExecutor, StepCheck}},
				"contains": map[string]any{"const": StepExecutor}},
			"mcp_config":   mcp,
			"instructions": map[string]any{"type": "string", "minLength": 1},
		},
	})
	return b
}

// checkSchema is the CheckOutput schema.
var checkSchema = json.RawMessage(`{"type":"object","required":["judge","score","reasoning","tool_assessments"],
"properties":{"judge":{"type":"boolean"},"score":{"type":"number","minimum":0,"maximum":100},"reasoning":{"type":"string"},
"tool_assessments":{"type":"array","items":{"type":"object","required":["name"],
"properties":{"name":{"type":"string"},"status":{"type":"string"},"assessment":{"type":"string"}}}}}}`)

const planPrompt = `You are the planner of a chain of agents: a planner, an executor that uses tools, and a checker.
Plan how to fulfil the user's request. Reply with one JSON object and nothing else, matching this JSON Schema (%s):
%s
- execution_chain: the steps after planning, in order: "executor", then "check" to have the result checked.
- mcp_config: the tool sources the executor may use, chosen only from the names the schema lists ("builtin" is every built-in tool, "mcp:<server>" every tool of that server, other names single tools). Select nothing the request does not need.
- instructions: what the executor should do, step by step.
Tools available:
%s`

const checkPrompt = `You are the checker of a chain of agents. Judge whether the executor's result fulfils the user's request and the planner's instructions.
Reply with one JSON object and nothing else, matching this JSON Schema (%s):
%s
judge is true when the result is good enough to give the user; score is 0 to 100; reasoning says why, and what to fix when judge is false; tool_assessments has one entry per tool call.`

// plan asks the model for a WorkflowPlan.
func (r *runner) plan(ctx context.Context) (*WorkflowPlan, *engine.Outcome) {
	var tools strings.Builder
	for _, s := range r.tools() {
		fmt.Fprintf(&tools, "- %s (%s): %s\n", s.Name, s.Source, s.Description)
	}
	schema := r.planSchema()
	system := fmt.Sprintf(planPrompt, SchemaPlan, schema, cmp.Or(tools.String(), "(none)\n"))
	input := r.t.Run.Input
	if input == "" {
		input = lastUserText(r.t.History)
	}
	raw, o := r.structured(ctx, StepPlanner, SchemaPlan, schema, system, input, errcode.InvalidPlan, "The planner did not produce a valid plan")
	if o != nil {
		return nil, o
	}
	var plan WorkflowPlan
	if err := json.Unmarshal(raw, &plan); err != nil {
		return nil, r.fail(ctx, StepPlanner, errcode.InvalidPlan, "The planner's plan could not be read.")
	}
	raw, _ = json.Marshal(plan) // the seed's field order
	r.h.Emit(ctx, event.Event{Step: StepPlanner, Payload: event.PlanData{Plan: raw}})
	return &plan, nil
}

// check asks the model for a CheckOutput on the last result.
func (r *runner) check(ctx context.Context) (CheckOutput, *engine.Outcome) {
	in := r.checkInput()
	system := fmt.Sprintf(checkPrompt, SchemaCheck, checkSchema)
	raw, o := r.structured(ctx, StepCheck, SchemaCheck, checkSchema, system, in, errcode.InvalidCheck, "The checker did not produce a valid verdict")
	if o != nil {
		return CheckOutput{}, o
	}
	var v CheckOutput
	if err := json.Unmarshal(raw, &v); err != nil {
		return CheckOutput{}, r.fail(ctx, StepCheck, errcode.InvalidCheck, "The checker's verdict could not be read.")
	}
	if v.ToolAssessments == nil {
		v.ToolAssessments = []ToolAssessment{} // the seed's shape has the list even when empty
	}
	raw, _ = json.Marshal(v) // the seed's field order
	r.h.Emit(ctx, event.Event{Step: StepCheck, Payload: event.CheckData{Summary: raw}})
	return v, nil
}

// checkInput is the checker's user message: the request, the instructions,
// the result and the tool calls of the pass being checked, as JSON.
func (r *runner) checkInput() string {
	in := struct {
		UserInput    string     `json:"user_input"`
		Instructions string     `json:"instructions"`
		Attempt      int        `json:"attempt"`
		Result       string     `json:"result"`
		ToolCalls    []toolCall `json:"tool_calls"`
	}{r.t.Run.Input, r.st.Plan.Instructions, r.st.Attempt, r.st.Result, r.st.Calls}
	if in.ToolCalls == nil {
		in.ToolCalls = []toolCall{}
	}
	b, _ := json.Marshal(in)
	return string(b)
}

// structured makes one structured model call for step, retried once when
// the answer does not match the schema.
func (r *runner) structured(ctx context.Context, step, name string, schema json.RawMessage, system, user, code, what string) (json.RawMessage, *engine.Outcome) {
	v, err := tool.NewValidator(schema)
	if err != nil {
		return nil, r.fail(ctx, step, errcode.SchemaFailed, "The "+step+" schema could not be compiled.")
	}
	if r.t.Agent != nil && strings.TrimSpace(r.t.Agent.Instructions) != "" {
		system = "The agent's instructions (plan, carry out and judge by them):\n" + prompt.Sanitise(r.t.Agent.Instructions) + "\n\n" + system
	}
	if r.e.system != "" {
		system = r.e.system + "\n\n" + system
	}
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: system}, {Role: llm.RoleUser, Content: user}}
	var problem error
	for attempt := range 2 {
		if o := engine.Stopped(ctx); o != nil {
			o.Usage = r.st.Usage
			return nil, o
		}
		if !r.st.Usage.Empty() {
			// Between model calls: the run's budgets may be spent.
			if o := engine.OverBudget(ctx, r.t, r.st.Usage); o != nil {
				return nil, o
			}
		}
		req := llm.Request{Messages: msgs, JSONObject: true, Schema: &llm.OutputSchema{Name: name, Schema: schema}}
		if r.t.Agent != nil {
			req.Temperature = r.t.Agent.Temperature
		}
		text, err := r.complete(ctx, req)
		if err != nil {
			if o := engine.Stopped(ctx); o != nil {
				o.Usage = r.st.Usage
				return nil, o
			}
			info := local.ModelError(err)
			return nil, r.fail(ctx, step, info.Code, info.Message)
		}
		doc := jsonObject(text)
		if problem = v.Check(doc); problem == nil {
			return doc, nil
		}
		r.log.Info("structured answer refused", "step", step, "attempt", attempt+1, "problem", problem)
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: text},
			llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("That is not a valid %s: %v. Reply again with one JSON object that matches the schema.", name, problem)})
	}
	return nil, r.fail(ctx, step, code, fmt.Sprintf("%s after two attempts: %v.", what, problem))
}

// complete collects one model answer's text.
func (r *runner) complete(ctx context.Context, req llm.Request) (string, error) {
	model := r.e.model
	if r.t.Agent != nil && r.t.Agent.Model != nil {
		model = r.t.Agent.Model // the agent's model plays planner and checker too
	}
	stream, err := model.Stream(ctx, req)
	if err != nil {
		return "", err
	}
	defer stream.Close()
	var acc llm.Accumulator
	for stream.Next() {
		acc.Add(stream.Chunk())
	}
	if u := acc.Usage(); u != nil {
		r.st.Usage = r.st.Usage.AddCall(engine.CallUsage(*u, model.Name()))
	}
	return acc.Text(), stream.Err()
}

// jsonObject cuts the JSON object out of a model's text: models wrap it in
// Markdown fences or a sentence even in JSON mode.
func jsonObject(text string) json.RawMessage {
	s := strings.TrimSpace(text)
	if i, j := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}'); i >= 0 && j > i {
		s = s[i : j+1]
	}
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return json.RawMessage(s)
	}
	return b.Bytes()
}

func lastUserText(history []chat.Message) string {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role == chat.RoleUser {
			return history[i].Content
		}
	}
	return ""
}
