package agui_test

import (
	"encoding/json"
	"flag"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/dialect/agui"
	"github.com/agentchat/agentchat/internal/dialect/dialecttest"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/ssetest"
)

var update = flag.Bool("update", false, "rewrite golden files")

var modes = []struct {
	name string
	mode agui.Mode
}{{"agui", agui.Standard}, {"agui-seed", agui.Seed}}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		for _, name := range dialecttest.Names() {
			t.Run(m.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				got := dialecttest.Encode(agui.NewEncoder(agui.Options{Mode: m.mode}), dialecttest.Script(name))
				dialecttest.Golden(t, name+"."+m.name+".golden", got, *update)
				verifyStream(t, got, m.mode == agui.Standard)
			})
		}
	}
}

// encode runs evs through a fresh encoder and returns the verified events.
func encode(t *testing.T, mode agui.Mode, evs []event.Event) []map[string]any {
	t.Helper()
	return verifyStream(t, dialecttest.Encode(agui.NewEncoder(agui.Options{Mode: mode}), evs), mode == agui.Standard)
}

func types(evs []map[string]any) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev["type"].(string))
	}
	return out
}

func find(evs []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		if ev["type"] == typ {
			out = append(out, ev)
		}
	}
	return out
}

// stamp numbers a hand-made event list like a run's emitter.
func stamp(run string, ps ...event.Payload) []event.Event {
	var evs []event.Event
	for i, p := range ps {
		evs = append(evs, event.Event{Tenant: "acme", Thread: "conv", Run: run, Seq: int64(i + 1),
			Time: dialecttest.T0.Add(time.Duration(i) * time.Second), Type: p.EventType(), Step: "worker", Payload: p})
	}
	return evs
}

func TestMessageCompletedWithoutDeltas(t *testing.T) {
	t.Parallel()
	ans := &event.Answer{Status: "success", Answer: "Done.", ResultType: "execution_report"}
	for _, m := range modes {
		evs := encode(t, m.mode, stamp("r",
			event.RunStartedData{},
			event.MessageCompletedData{MessageID: "m1", Role: "assistant", Content: "Done.", Answer: ans},
			event.RunFinishedData{Status: event.StatusSucceeded, Answer: ans},
		))
		want := []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}
		if got := types(evs); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", m.name, got, want)
		}
		if evs[2]["delta"] != "Done." {
			t.Errorf("%s: content %v", m.name, evs[2]["delta"])
		}
	}
}

func TestReasoningClosedBeforeTextAndTools(t *testing.T) {
	t.Parallel()
	evs := encode(t, agui.Standard, stamp("r",
		event.RunStartedData{},
		event.ReasoningDeltaData{MessageID: "m", Delta: "hmm"},
		event.TextDeltaData{MessageID: "m", Delta: "Hi"},
		event.ReasoningDeltaData{MessageID: "m", Delta: "more"},
		event.ToolCallStartedData{ToolCallID: "c", Name: "t", MessageID: "m"},
		event.ToolCallReadyData{ToolCallID: "c", Name: "t", Args: json.RawMessage(`{"a":1}`)},
		event.RunFinishedData{Status: event.StatusSucceeded},
	))
	want := []string{"RUN_STARTED",
		"REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT",
		"REASONING_MESSAGE_END", "REASONING_END",
		"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
		"REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT",
		"REASONING_MESSAGE_END", "REASONING_END",
		"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"}
	if got := types(evs); !slices.Equal(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	// Reasoning and text of one model message never share a message id.
	if evs[1]["messageId"] == evs[6]["messageId"] {
		t.Errorf("reasoning and text share id %v", evs[1]["messageId"])
	}
	if evs[15]["delta"] != `{"a":1}` {
		t.Errorf("unstreamed args sent as %v", evs[15]["delta"])
	}
}

func TestStandardHasNoSeedFields(t *testing.T) {
	t.Parallel()
	stream := string(dialecttest.Encode(agui.NewEncoder(agui.Options{}), dialecttest.Script(dialecttest.Rich)))
	// verifyStream in strict mode already refuses any non-schema field; the
	// internal statistics must not hide inside free-form values either.
	verifyStream(t, []byte(stream), true)
	for _, field := range []string{"stage", "tool_name", "tool_call_args", "gpt-test", "latencyMs", "cost", "ui_hints"} {
		if strings.Contains(stream, field) {
			t.Errorf("standard stream contains %q", field)
		}
	}
	// The run's token usage is AG-UI 1.0's, on RUN_FINISHED (issue 24).
	if !strings.Contains(stream, `"usage":[{"model":"unknown","inputTokens":1200,"outputTokens":310,"totalTokens":1510,"reasoningTokens":40}]`) {
		t.Errorf("RUN_FINISHED without the run's usage list:\n%s", stream)
	}
}

func TestSeedFields(t *testing.T) {
	t.Parallel()
	evs := encode(t, agui.Seed, dialecttest.Script(dialecttest.Rich))
	for _, ev := range evs {
		if ev["threadId"] != "conv-1" || ev["runId"] == nil {
			t.Errorf("%v lacks threadId/runId", ev["type"])
		}
	}
	results := find(evs, "TOOL_CALL_RESULT")
	if len(results) != 2 {
		t.Fatalf("%d results", len(results))
	}
	ok, bad := results[0], results[1]
	if ok["tool_call_id"] != ok["toolCallId"] || ok["tool_name"] != "search_orders" || ok["status"] != "success" ||
		ok["result"] != "42 paid orders, 1234.50 EUR" || ok["role"] != "tool" || ok["stage"] != "worker" {
		t.Errorf("success result %v", ok)
	}
	if _, has := ok["error"]; has {
		t.Errorf("empty error sent: %v", ok)
	}
	if bad["status"] != "failure" || bad["error"] != "channel not found" || bad["messageId"] != "call-2-result" {
		t.Errorf("failure result %v", bad)
	}
	if args, _ := bad["tool_call_args"].(map[string]any); args["channel"] != "#sales" {
		t.Errorf("tool_call_args %v", bad["tool_call_args"])
	}
	// The fragment completing the arguments carries them as an object.
	var withArgs int
	for _, a := range find(evs, "TOOL_CALL_ARGS") {
		if _, has := a["args"]; has {
			withArgs++
		}
		if _, isString := a["delta"].(string); !isString {
			t.Errorf("TOOL_CALL_ARGS without a delta string: %v", a)
		}
	}
	if withArgs != 2 {
		t.Errorf("%d TOOL_CALL_ARGS carry args, want one per call", withArgs)
	}
	var end map[string]any
	for _, e := range find(evs, "TEXT_MESSAGE_END") {
		if e["messageId"] == "msg-a2" {
			end = e
		}
	}
	if end == nil || end["status"] != "partial_success" || end["result_type"] != "execution_report" ||
		len(end["key_points"].([]any)) != 3 || len(end["suggested_actions"].([]any)) != 2 {
		t.Fatalf("final TEXT_MESSAGE_END %v", end)
	}
	schema := end["ui_schema"].(map[string]any)
	if schema["version"] != "1" || len(schema["blocks"].([]any)) != 4 {
		t.Errorf("ui_schema %v", schema)
	}
}

// An awaiting call ends the AG-UI run with an interrupt; the run's later
// events wait for the continuation run, which restarts the open steps.
func TestInterruptAndResume(t *testing.T) {
	t.Parallel()
	evs := encode(t, agui.Standard, dialecttest.Script(dialecttest.Rich))
	var got []string
	for _, ev := range evs {
		switch ev["type"] {
		case "RUN_STARTED", "RUN_FINISHED", "STEP_STARTED", "STEP_FINISHED", "TOOL_CALL_RESULT":
			got = append(got, ev["type"].(string)+" "+str(ev["runId"])+str(ev["stepName"])+str(ev["toolCallId"]))
		}
	}
	want := []string{
		"RUN_STARTED client-run-1", "STEP_STARTED router", "STEP_FINISHED router", "STEP_STARTED worker",
		"STEP_FINISHED worker", "RUN_FINISHED client-run-1",
		"RUN_STARTED client-run-2", "STEP_STARTED worker", "TOOL_CALL_RESULT call-1", "TOOL_CALL_RESULT call-2",
		"STEP_FINISHED worker", "RUN_FINISHED client-run-2",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	interrupted := find(evs, "RUN_FINISHED")[0]
	outcome := interrupted["outcome"].(map[string]any)
	in := outcome["interrupts"].([]any)[0].(map[string]any)
	if outcome["type"] != "interrupt" || in["id"] != "conf-1" || in["reason"] != "confirmation" ||
		in["toolCallId"] != "call-2" || in["expiresAt"] != "2026-03-16T09:15:00.000Z" || in["message"] == nil {
		t.Errorf("interrupt %v", interrupted)
	}
	rs := in["responseSchema"].(map[string]any)
	if rs["type"] != "object" || rs["properties"].(map[string]any)["approved"] == nil {
		t.Errorf("responseSchema %v", rs)
	}
	if _, has := interrupted["result"]; has {
		t.Errorf("interrupted run carries a result")
	}
	final := find(evs, "RUN_FINISHED")[1]
	if _, has := final["outcome"]; has {
		t.Errorf("successful run carries an outcome: %v", final)
	}
	if r := final["result"].(map[string]any); r["answer"] == nil || r["ui_schema"] == nil {
		t.Errorf("result %v", r)
	}
}

// Two calls awaiting in one pause surface one AG-UI run at a time; a resume
// without a client run id gets a derived, stable one.
func TestTwoInterrupts(t *testing.T) {
	t.Parallel()
	args := json.RawMessage(`{}`)
	evs := encode(t, agui.Standard, stamp("r",
		event.RunStartedData{},
		event.ToolCallReadyData{ToolCallID: "a", Name: "x", Args: args},
		event.ToolAwaitingData{ToolCallID: "a", Name: "x", ConfirmationID: "conf-a"},
		event.ToolCallReadyData{ToolCallID: "b", Name: "x", Args: args},
		event.ToolAwaitingData{ToolCallID: "b", Name: "x", ConfirmationID: "conf-b"},
		event.RunResumedData{ConfirmationID: "conf-a", Decision: "reject"},
		event.ToolResultData{ToolCallID: "a", Name: "x", Status: event.ToolFailure, Denied: true, Content: "declined"},
		event.RunResumedData{ConfirmationID: "conf-b", Decision: "approve"},
		event.ToolResultData{ToolCallID: "b", Name: "x", Status: event.ToolSuccess, Content: "ok"},
		event.RunFinishedData{Status: event.StatusSucceeded},
	))
	var runs []string
	for _, ev := range evs {
		switch ev["type"] {
		case "RUN_STARTED":
			runs = append(runs, "start "+ev["runId"].(string))
		case "RUN_FINISHED":
			s := "finish " + ev["runId"].(string)
			if o, ok := ev["outcome"].(map[string]any); ok {
				s += " " + o["interrupts"].([]any)[0].(map[string]any)["id"].(string)
			}
			runs = append(runs, s)
		case "TOOL_CALL_RESULT":
			runs = append(runs, "result "+ev["toolCallId"].(string))
		}
	}
	want := []string{"start r", "finish r conf-a", "start r-6", "finish r-6 conf-b", "start r-8", "result a", "result b", "finish r-8"}
	if !slices.Equal(runs, want) {
		t.Errorf("got  %q\nwant %q", runs, want)
	}
}

func TestFailedAndCancelled(t *testing.T) {
	t.Parallel()
	evs := encode(t, agui.Standard, dialecttest.Script(dialecttest.Failed))
	errs := find(evs, "RUN_ERROR")
	if len(errs) != 1 || errs[0]["code"] != "unavailable" || evs[len(evs)-1]["type"] != "RUN_ERROR" {
		t.Errorf("failed run: %v", types(evs))
	}
	// AG-UI 1.0: a cancel ends the run with RUN_FINISHED and the cancelled
	// outcome, every open message and step closed first.
	evs = encode(t, agui.Standard, dialecttest.Script(dialecttest.Cancelled))
	want := []string{"RUN_STARTED", "STEP_STARTED", "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT",
		"REASONING_MESSAGE_END", "REASONING_END", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT",
		"TEXT_MESSAGE_END", "STEP_FINISHED", "RUN_FINISHED"}
	if got := types(evs); !slices.Equal(got, want) {
		t.Errorf("cancelled: %v", got)
	}
	if last := evs[len(evs)-1]; !reflect.DeepEqual(last["outcome"], map[string]any{"type": agui.OutcomeCancelled}) || last["usage"] == nil {
		t.Errorf("cancelled end %v", last)
	}
	// Before 1.0 the schemas know no cancelled outcome: RUN_ERROR, code cancelled.
	evs = verifyStream(t, dialecttest.Encode(agui.NewEncoder(agui.Options{PreV1: true}), dialecttest.Script(dialecttest.Cancelled)), true)
	want = append(want[:len(want)-2:len(want)-2], "RUN_ERROR")
	if got := types(evs); !slices.Equal(got, want) {
		t.Errorf("cancelled, before 1.0: %v", got)
	}
	if last := evs[len(evs)-1]; last["code"] != agui.CodeCancelled || last["message"] == "" {
		t.Errorf("cancelled end before 1.0: %v", last)
	}
	// A failure without code or message still sends neither null nor empty text.
	evs = encode(t, agui.Standard, stamp("r", event.RunStartedData{}, event.RunFinishedData{Status: event.StatusFailed}))
	if e := evs[1]; e["message"] == "" {
		t.Errorf("failed end %v", e)
	} else if _, has := e["code"]; has {
		t.Errorf("empty code sent: %v", e)
	}
}

// A stream joined mid-run (Last-Event-ID replay) still starts with RUN_STARTED.
func TestJoinMidRun(t *testing.T) {
	t.Parallel()
	script := dialecttest.Script(dialecttest.Rich)
	for from := range script {
		for _, m := range modes {
			encode(t, m.mode, script[from:])
		}
	}
}

func TestKeepAliveAbortAndSnapshots(t *testing.T) {
	t.Parallel()
	enc := agui.NewEncoder(agui.Options{})
	if got := string(enc.KeepAlive(nil, time.Now())); got != ": keep-alive\n\n" {
		t.Errorf("keep-alive %q", got)
	}
	stream := enc.Encode(nil, stamp("r", event.RunStartedData{})[0])
	stream = enc.Abort(stream, event.ErrorInfo{Code: "server_shutdown", Message: "Reconnect."})
	evs := verifyFrames(t, stream, true, false)
	if last := evs[len(evs)-1]; last["type"] != "RUN_ERROR" || last["code"] != "server_shutdown" {
		t.Errorf("abort %v", last)
	}

	snap := agui.AppendMessagesSnapshot(nil, "9", dialecttest.T0, []agui.Message{
		{ID: "u1", Role: "user", Content: "hi"},
		{ID: "a1", Role: "assistant", ToolCalls: []agui.ToolCall{{ID: "c1", Function: agui.FunctionCall{Name: "t", Arguments: `{"a":1}`}}}},
		{ID: "t1", Role: "tool", Content: "ok", ToolCallID: "c1"},
	})
	want := "event: MESSAGES_SNAPSHOT\nid: 9\ndata: " + `{"type":"MESSAGES_SNAPSHOT","timestamp":1773651600000,"messages":[` +
		`{"id":"u1","role":"user","content":"hi"},` +
		`{"id":"a1","role":"assistant","toolCalls":[{"id":"c1","type":"function","function":{"name":"t","arguments":"{\"a\":1}"}}]},` +
		`{"id":"t1","role":"tool","content":"ok","toolCallId":"c1"}]}` + "\n\n"
	if string(snap) != want {
		t.Errorf("messages snapshot\n got %s\nwant %s", snap, want)
	}
	for _, f := range ssetest.Parse(t, snap) {
		dialecttest.NoNull(t, f.Data)
		if err := checkSchema(dialecttest.Object(t, f.Data), true); err != nil {
			t.Error(err)
		}
	}
	if got := string(agui.AppendMessagesSnapshot(nil, "", time.Time{}, nil)); got != "event: MESSAGES_SNAPSHOT\ndata: {\"type\":\"MESSAGES_SNAPSHOT\",\"messages\":[]}\n\n" {
		t.Errorf("empty snapshot %q", got)
	}
	for state, want := range map[string]string{`{"a":[1]}`: `{"a":[1]}`, ``: `{}`, `null`: `{}`, `{bad`: `{}`} {
		got := string(agui.AppendStateSnapshot(nil, "", time.Time{}, json.RawMessage(state)))
		if w := "event: STATE_SNAPSHOT\ndata: {\"type\":\"STATE_SNAPSHOT\",\"snapshot\":" + want + "}\n\n"; got != w {
			t.Errorf("state %q: %q", state, got)
		}
	}
}

func str(v any) string { s, _ := v.(string); return s }

func BenchmarkEncodeAGUI(b *testing.B) {
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			evs := dialecttest.LongRun(1000)
			var dst []byte
			b.ReportAllocs()
			for b.Loop() {
				enc := agui.NewEncoder(agui.Options{Mode: m.mode})
				for _, ev := range evs {
					dst = enc.Encode(dst[:0], ev)
				}
			}
		})
	}
}

// Events without ids (hand-made, or from a test engine) must not trip the encoder.
func TestZeroEvents(t *testing.T) {
	t.Parallel()
	enc := agui.NewEncoder(agui.Options{Mode: agui.Seed})
	var out []byte
	for _, p := range []event.Payload{event.TextDeltaData{Delta: "x"}, event.ToolCallArgsData{Delta: "{"},
		event.MessageCompletedData{Content: "x"}, event.RunFinishedData{}} {
		out = enc.Encode(out, event.Event{Type: p.EventType(), Payload: p})
	}
	if len(out) == 0 {
		t.Error("no frames")
	}
}

// Even degenerate input (zero payloads of every type) yields a stream the
// real client accepts.
func TestZeroPayloadsVerify(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		encode(t, m.mode, dialecttest.ZeroEvents())
	}
}

// Every frame has its own id, and a client that resumes after any frame
// gets exactly the frames after it, in both modes and in the thread
// stream's exchange: a text message's START and first CONTENT, the frames
// that close a run before RUN_FINISHED, and held events released on
// resume are frames of one event each.
func TestResumeAfterEveryFrame(t *testing.T) {
	t.Parallel()
	encs := map[string]func() dialect.Encoder{
		"agui":      func() dialect.Encoder { return agui.NewEncoder(agui.Options{Mode: agui.Standard}) },
		"agui-seed": func() dialect.Encoder { return agui.NewEncoder(agui.Options{Mode: agui.Seed}) },
		"thread":    func() dialect.Encoder { return agui.NewThreadExchange("client-thread", false, nil) },
	}
	for encName, newEnc := range encs {
		for _, name := range dialecttest.Names() {
			t.Run(encName+"/"+name, func(t *testing.T) {
				t.Parallel()
				dialecttest.CheckResume(t, newEnc, dialecttest.Script(name))
			})
		}
	}
}
