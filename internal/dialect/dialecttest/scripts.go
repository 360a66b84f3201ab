package dialecttest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentchat/agentchat/internal/event"
)

// Script names, in the order golden tests run them.
const (
	Rich      = "rich"      // every kind of event, a confirmation, two runs of AG-UI
	Failed    = "failed"    // a model failure: partial message, error, failed end
	Cancelled = "cancelled" // cancelled mid-answer, the text message still open
	Chain     = "chain"     // planner → executor → check with plan, tool and check events
	Awaiting  = "awaiting"  // paused for a confirmation; no end yet
)

// Names lists every script.
func Names() []string { return []string{Rich, Failed, Cancelled, Chain, Awaiting} }

// Script returns the canonical events of the named script; it panics on an
// unknown name. The events are the single source of truth for the golden
// files; testdata/<name>.events.jsonl is their checked JSON-lines form.
func Script(name string) []event.Event {
	build, ok := scripts[name]
	if !ok {
		panic(fmt.Sprintf("dialecttest: unknown script %q", name))
	}
	return build()
}

var scripts = map[string]func() []event.Event{
	Rich:      rich,
	Failed:    failed,
	Cancelled: cancelled,
	Chain:     chain,
	Awaiting:  awaiting,
}

// T0 is the time of seq 0 in every script; event n happens n×100ms later.
var T0 = time.Date(2026, 3, 16, 9, 0, 0, 0, time.UTC)

// builder stamps events the way the run's emitter does: one thread, one
// run, seq counting from 1.
type builder struct {
	thread, run, turn string
	seq               int64
	iteration         int
	step              string
	evs               []event.Event
}

func newBuilder(thread, run, turn string) *builder {
	return &builder{thread: thread, run: run, turn: turn}
}

func (b *builder) add(p event.Payload) *builder {
	b.seq++
	b.evs = append(b.evs, event.Event{
		Tenant: "acme", Thread: b.thread, Run: b.run, Seq: b.seq,
		Time: T0.Add(time.Duration(b.seq) * 100 * time.Millisecond),
		Type: p.EventType(), Turn: b.turn, Iteration: b.iteration, Step: b.step, Payload: p,
	})
	return b
}

func (b *builder) at(step string, iteration int) *builder {
	b.step, b.iteration = step, iteration
	return b
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// rich is one run of the local engine with everything a run can do: a
// router and a worker step, reasoning, text, two tool calls streamed in one
// model call (the second needs a person's approval and pauses the run), the
// first call's result arriving while the run pauses, the approval, a failed
// second call, a second model call with the structured final answer,
// retrieval hits and a state patch.
func rich() []event.Event {
	answer := &event.Answer{
		Status:           "partial_success",
		Answer:           "There were 42 paid orders totalling 1234.50 EUR. I could not notify #sales.",
		KeyPoints:        []string{"42 paid orders in week 11", "1234.50 EUR in total", "#sales was not notified"},
		ResultType:       "execution_report",
		SuggestedActions: []string{"Retry the notification", "Open the order list"},
		UIHints: raw(`{"blocks":[{"kind":"text"},{"kind":"table","title":"Orders","columns":["status","count","total"],` +
			`"rows":[["paid",42,1234.5]]},{"kind":"key_points"},{"kind":"actions"}]}`),
	}
	b := newBuilder("conv-1", "run-1", "turn-1")
	b.add(event.ConversationCreatedData{ConversationID: "conv-1", Title: "Weekly orders"})
	b.add(event.RunStartedData{ConversationID: "conv-1", Input: "Summarise this week's orders and tell #sales.",
		UserMessageID: "msg-u1", Engine: "local", ClientRunID: "client-run-1"})
	b.add(event.StateSnapshotData{State: raw(`{"status":"draft"}`)})
	b.at("router", 0).add(event.StepStartedData{Name: "router"})
	b.add(event.StepFinishedData{Name: "router"})
	b.at("worker", 0).add(event.StepStartedData{Name: "worker"})
	b.add(event.RetrievalData{Query: "weekly orders", Hits: []event.RetrievalHit{
		{Content: "Orders are paid when the invoice is settled.", Source: "kb/orders.md", Score: 0.91, DocumentID: "doc-1", ChunkID: "chunk-1"},
		{Content: "#sales is the sales team's channel.", Source: "kb/channels.md", Score: 0.74, DocumentID: "doc-2", ChunkID: "chunk-7"},
	}})
	b.at("worker", 1).add(event.IterationData{Model: "gpt-test"})
	b.add(event.ReasoningDeltaData{MessageID: "msg-a1", Delta: "The user wants the paid orders "})
	b.add(event.ReasoningDeltaData{MessageID: "msg-a1", Delta: "of week 11."})
	b.add(event.TextDeltaData{MessageID: "msg-a1", Delta: "Let me look up "})
	b.add(event.TextDeltaData{MessageID: "msg-a1", Delta: "the orders."})
	b.add(event.ToolCallStartedData{ToolCallID: "call-1", Name: "search_orders", MessageID: "msg-a1"})
	b.add(event.ToolCallArgsData{ToolCallID: "call-1", Delta: `{"week":`})
	b.add(event.ToolCallArgsData{ToolCallID: "call-1", Delta: `"2026-W11",`})
	b.add(event.ToolCallArgsData{ToolCallID: "call-1", Delta: `"status":"paid"}`})
	b.add(event.ToolCallStartedData{ToolCallID: "call-2", Name: "send_message", MessageID: "msg-a1"})
	b.add(event.ToolCallArgsData{ToolCallID: "call-2", Delta: `{"channel":"#sales","text":"Weekly orders are ready"}`})
	args1 := raw(`{"week":"2026-W11","status":"paid"}`)
	args2 := raw(`{"channel":"#sales","text":"Weekly orders are ready"}`)
	b.add(event.ToolCallReadyData{ToolCallID: "call-1", Name: "search_orders", Args: args1})
	b.add(event.ToolRunningData{ToolCallID: "call-1", Name: "search_orders", Args: args1})
	b.add(event.ToolCallReadyData{ToolCallID: "call-2", Name: "send_message", Args: args2})
	b.add(event.ToolAwaitingData{ToolCallID: "call-2", Name: "send_message", Args: args2, ConfirmationID: "conf-1",
		ExpiresAt: T0.Add(15 * time.Minute), Message: "Allow send_message to run with these arguments?"})
	// The first call ran concurrently and ends while the run pauses.
	b.add(event.ToolResultData{ToolCallID: "call-1", Name: "search_orders", Args: args1, Status: event.ToolSuccess,
		Output: raw(`{"count":42,"total":1234.5,"currency":"EUR"}`), Content: "42 paid orders, 1234.50 EUR", MessageID: "msg-t1"})
	b.add(event.RunResumedData{ConfirmationID: "conf-1", Decision: "approve", ClientRunID: "client-run-2"})
	b.add(event.ToolRunningData{ToolCallID: "call-2", Name: "send_message", Args: args2})
	b.add(event.ToolResultData{ToolCallID: "call-2", Name: "send_message", Args: args2, Status: event.ToolFailure,
		Content: "Error: channel not found", Error: "channel not found"})
	b.at("worker", 2).add(event.IterationData{Model: "gpt-test"})
	b.add(event.TextDeltaData{MessageID: "msg-a2", Delta: "There were 42 paid orders "})
	b.add(event.TextDeltaData{MessageID: "msg-a2", Delta: "totalling 1234.50 EUR. "})
	b.add(event.TextDeltaData{MessageID: "msg-a2", Delta: "I could not notify #sales."})
	b.add(event.MessageCompletedData{MessageID: "msg-a2", Role: "assistant", Content: answer.Answer, Answer: answer})
	b.add(event.ContextPatchData{Patch: raw(`[{"op":"add","path":"/orders_total","value":1234.5},{"op":"replace","path":"/status","value":"reported"}]`)})
	b.at("worker", 0).add(event.StepFinishedData{Name: "worker"})
	b.add(event.RunFinishedData{Status: event.StatusSucceeded, Usage: event.Usage{InputTokens: 1200, OutputTokens: 310, ReasoningTokens: 40}, Answer: answer})
	return b.evs
}

// failed is a model call cut off mid-answer: what streamed is kept as a
// partial message, then the error and the failed end.
func failed() []event.Event {
	info := event.ErrorInfo{Code: "unavailable", Message: "The model provider is unavailable."}
	b := newBuilder("conv-2", "run-2", "turn-2")
	b.add(event.RunStartedData{ConversationID: "conv-2", Input: "How many items are in stock?", UserMessageID: "msg-u2", Engine: "local"})
	b.at("worker", 0).add(event.StepStartedData{Name: "worker"})
	b.at("worker", 1).add(event.IterationData{Model: "gpt-test"})
	b.add(event.TextDeltaData{MessageID: "msg-f1", Delta: "Checking the "})
	b.add(event.TextDeltaData{MessageID: "msg-f1", Delta: "inventory"})
	b.add(event.MessageCompletedData{MessageID: "msg-f1", Role: "assistant", Content: "Checking the inventory", Partial: true})
	b.add(event.ErrorData{ErrorInfo: info})
	b.at("", 0).add(event.RunFinishedData{Status: event.StatusFailed, Error: &info, Usage: event.Usage{InputTokens: 80}})
	return b.evs
}

// cancelled is stopped by the user while the answer streams.
func cancelled() []event.Event {
	b := newBuilder("conv-3", "run-3", "turn-3")
	b.add(event.RunStartedData{ConversationID: "conv-3", Input: "Write a long report.", UserMessageID: "msg-u3", Engine: "local"})
	b.at("worker", 0).add(event.StepStartedData{Name: "worker"})
	b.at("worker", 1).add(event.IterationData{Model: "gpt-test"})
	b.add(event.ReasoningDeltaData{MessageID: "msg-c1", Delta: "Outline first."})
	b.add(event.TextDeltaData{MessageID: "msg-c1", Delta: "Drafting the "})
	b.add(event.TextDeltaData{MessageID: "msg-c1", Delta: "report"})
	b.at("", 0).add(event.RunFinishedData{Status: event.StatusCancelled, Usage: event.Usage{InputTokens: 50, OutputTokens: 4}})
	return b.evs
}

// chain is seed 003's planner → executor → check with its structured plan
// and verdict, one tool call and a final text.
func chain() []event.Event {
	args := raw(`{"query":"weekly report template"}`)
	b := newBuilder("conv-4", "run-4", "turn-4")
	b.add(event.RunStartedData{ConversationID: "conv-4", Input: "Write the weekly report", UserMessageID: "msg-u4", Engine: "chain"})
	b.at("planner", 0).add(event.StepStartedData{Name: "planner"})
	b.add(event.PlanData{Plan: raw(`{"execution_chain":["executor","check"],"mcp_config":[{"name":"search","transport":"stdio"}],"instructions":"Find the template, then fill it."}`)})
	b.add(event.StepFinishedData{Name: "planner"})
	b.at("executor", 0).add(event.StepStartedData{Name: "executor"})
	b.at("executor", 1).add(event.IterationData{Model: "gpt-test"})
	b.add(event.ToolCallStartedData{ToolCallID: "call-c1", Name: "search", MessageID: "msg-x1"})
	b.add(event.ToolCallArgsData{ToolCallID: "call-c1", Delta: `{"query":"weekly report template"}`})
	b.add(event.ToolCallReadyData{ToolCallID: "call-c1", Name: "search", Args: args})
	b.add(event.ToolRunningData{ToolCallID: "call-c1", Name: "search", Args: args})
	b.add(event.ToolResultData{ToolCallID: "call-c1", Name: "search", Args: args, Status: event.ToolSuccess,
		Output: raw(`{"hits":["templates/weekly.md"]}`), Content: "1 hit: templates/weekly.md", MessageID: "msg-t4"})
	b.at("executor", 0).add(event.StepFinishedData{Name: "executor"})
	b.at("check", 0).add(event.StepStartedData{Name: "check"})
	b.add(event.CheckData{Summary: raw(`{"judge":true,"score":90,"reasoning":"The report follows the template.","tool_assessments":[{"name":"search","ok":true}]}`)})
	b.add(event.StepFinishedData{Name: "check"})
	b.at("", 0).add(event.MessageCompletedData{MessageID: "msg-x2", Role: "assistant", Content: "Weekly report: 42 orders, all paid."})
	b.add(event.RunFinishedData{Status: event.StatusSucceeded, Usage: event.Usage{InputTokens: 900, OutputTokens: 120}})
	return b.evs
}

// awaiting pauses for a confirmation while its text message is still open;
// the run has not ended when the script does.
func awaiting() []event.Event {
	args := raw(`{"to":"ops@example.com","subject":"Stock alert"}`)
	b := newBuilder("conv-5", "run-5", "turn-5")
	b.add(event.RunStartedData{ConversationID: "conv-5", Input: "Email ops about the stock alert.", UserMessageID: "msg-u5", Engine: "local"})
	b.at("worker", 0).add(event.StepStartedData{Name: "worker"})
	b.at("worker", 1).add(event.IterationData{Model: "gpt-test"})
	b.add(event.TextDeltaData{MessageID: "msg-w1", Delta: "I will email ops."})
	b.add(event.ToolCallStartedData{ToolCallID: "call-w1", Name: "send_email", MessageID: "msg-w1"})
	b.add(event.ToolCallArgsData{ToolCallID: "call-w1", Delta: `{"to":"ops@example.com",`})
	b.add(event.ToolCallArgsData{ToolCallID: "call-w1", Delta: `"subject":"Stock alert"}`})
	b.add(event.ToolCallReadyData{ToolCallID: "call-w1", Name: "send_email", Args: args})
	b.add(event.ToolAwaitingData{ToolCallID: "call-w1", Name: "send_email", Args: args, ConfirmationID: "conf-5",
		ExpiresAt: T0.Add(15 * time.Minute), Message: "Allow send_email to run with these arguments?"})
	return b.evs
}

// ZeroEvents is one event of every canonical type with a zero payload and
// no tenant, thread or run (run.started first, run.finished last): encoders
// must survive it and still write what their clients accept.
func ZeroEvents() []event.Event {
	types := event.Types()
	slices.SortFunc(types, func(a, b event.Type) int {
		rank := func(t event.Type) int { return map[event.Type]int{event.RunStarted: -1, event.RunFinished: 1}[t] }
		if r := rank(a) - rank(b); r != 0 {
			return r
		}
		return strings.Compare(string(a), string(b))
	})
	var out []event.Event
	for i, t := range types {
		p, err := event.DecodePayload(t, []byte(`{}`))
		if err != nil {
			panic(err)
		}
		out = append(out, event.Event{Seq: int64(i + 1), Type: t, Payload: p})
	}
	return out
}

// LongRun is a run streaming n text deltas: the benchmark workload.
func LongRun(n int) []event.Event {
	b := newBuilder("conv-b", "run-b", "turn-b")
	b.add(event.RunStartedData{ConversationID: "conv-b", Input: "Tell me a long story.", UserMessageID: "msg-ub", Engine: "local"})
	b.at("worker", 0).add(event.StepStartedData{Name: "worker"})
	b.at("worker", 1).add(event.IterationData{Model: "gpt-test"})
	for i := range n {
		b.add(event.TextDeltaData{MessageID: "msg-b1", Delta: fmt.Sprintf("word %d, ", i)})
	}
	ans := &event.Answer{Status: "success", Answer: "a long story", KeyPoints: []string{}, ResultType: "execution_report", SuggestedActions: []string{}}
	b.add(event.MessageCompletedData{MessageID: "msg-b1", Role: "assistant", Content: "a long story", Answer: ans})
	b.at("worker", 0).add(event.StepFinishedData{Name: "worker"})
	b.add(event.RunFinishedData{Status: event.StatusSucceeded, Answer: ans})
	return slices.Clip(b.evs)
}
