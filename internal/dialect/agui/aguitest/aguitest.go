// Package aguitest checks AG-UI streams the way @ag-ui/client 1.0 does: the
// event schemas of @ag-ui/core (required fields, types, no null, and in
// strict mode no field outside the schema, which the client would strip
// with a warning) and the ordering rules of the client's verifyEvents. Only
// tests import it; the Node conformance suite (test/conformance) runs the
// real client against the real server.
package aguitest

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/agentchat/agentchat/internal/dialect/dialecttest"
	"github.com/agentchat/agentchat/internal/ssetest"
)

// fieldSet is what @ag-ui/core 1.0's schema allows on one event type, and
// which of those fields are required.
type fieldSet struct {
	required []string
	optional []string
}

var base = []string{"type", "timestamp", "rawEvent", "metadata"}

// schema mirrors @ag-ui/core 1.0's event schemas (src/generated/schemas.ts).
var schema = map[string]fieldSet{
	"RUN_STARTED":               {[]string{"threadId", "runId"}, []string{"parentRunId", "input", "protocolVersion"}},
	"RUN_FINISHED":              {[]string{"threadId", "runId"}, []string{"result", "outcome", "usage"}},
	"RUN_ERROR":                 {[]string{"message"}, []string{"code", "usage"}},
	"STEP_STARTED":              {[]string{"stepName"}, nil},
	"STEP_FINISHED":             {[]string{"stepName"}, nil},
	"TEXT_MESSAGE_START":        {[]string{"messageId"}, []string{"role", "name"}},
	"TEXT_MESSAGE_CONTENT":      {[]string{"messageId", "delta"}, nil},
	"TEXT_MESSAGE_END":          {[]string{"messageId"}, nil},
	"TOOL_CALL_START":           {[]string{"toolCallId", "toolCallName"}, []string{"parentMessageId"}},
	"TOOL_CALL_ARGS":            {[]string{"toolCallId", "delta"}, nil},
	"TOOL_CALL_END":             {[]string{"toolCallId"}, nil},
	"TOOL_CALL_RESULT":          {[]string{"messageId", "toolCallId", "content"}, []string{"role"}},
	"REASONING_START":           {[]string{"messageId"}, nil},
	"REASONING_MESSAGE_START":   {[]string{"messageId", "role"}, nil},
	"REASONING_MESSAGE_CONTENT": {[]string{"messageId", "delta"}, nil},
	"REASONING_MESSAGE_END":     {[]string{"messageId"}, nil},
	"REASONING_END":             {[]string{"messageId"}, nil},
	"STATE_SNAPSHOT":            {[]string{"snapshot"}, nil},
	"STATE_DELTA":               {[]string{"delta"}, nil},
	"MESSAGES_SNAPSHOT":         {[]string{"messages"}, nil},
	"CUSTOM":                    {[]string{"name", "value"}, nil},
}

var interruptFields = []string{"id", "reason", "message", "toolCallId", "responseSchema", "expiresAt", "metadata"}

// CheckSchema reports what a strict 1.0 client would refuse in one event
// (missing or mistyped required fields) and, when strict, what it would
// strip (unknown fields).
func CheckSchema(ev map[string]any, strict bool) error {
	typ, _ := ev["type"].(string)
	fs, ok := schema[typ]
	if !ok {
		return fmt.Errorf("unknown type %q", typ)
	}
	for _, k := range fs.required {
		if _, ok := ev[k]; !ok {
			return fmt.Errorf("%s without %s", typ, k)
		}
	}
	for _, k := range []string{"threadId", "runId", "messageId", "toolCallId", "toolCallName", "delta", "stepName", "message", "content", "name", "role", "code", "parentMessageId"} {
		if v, ok := ev[k]; ok && fs.has(k) && typ != "STATE_DELTA" {
			if _, isString := v.(string); !isString {
				return fmt.Errorf("%s.%s is %T, not a string", typ, k, v)
			}
		}
	}
	if ts, ok := ev["timestamp"]; ok {
		if n, isNum := ts.(json.Number); !isNum || n.String() != fmt.Sprint(mustInt(n)) {
			return fmt.Errorf("%s.timestamp %v is not an integer", typ, ts)
		}
	}
	switch typ {
	case "TEXT_MESSAGE_START":
		if r, ok := ev["role"]; ok && !slices.Contains([]string{"developer", "system", "assistant", "user"}, r.(string)) {
			return fmt.Errorf("text role %v", r)
		}
	case "REASONING_MESSAGE_START":
		if ev["role"] != "reasoning" {
			return fmt.Errorf("reasoning role %v", ev["role"])
		}
	case "TOOL_CALL_RESULT":
		if r, ok := ev["role"]; ok && r != "tool" {
			return fmt.Errorf("tool result role %v", r)
		}
	case "STATE_DELTA":
		if _, ok := ev["delta"].([]any); !ok {
			return fmt.Errorf("STATE_DELTA.delta is not an array")
		}
	case "RUN_FINISHED":
		if o, ok := ev["outcome"]; ok {
			if err := checkOutcome(o, strict); err != nil {
				return err
			}
		}
	}
	if strict {
		for k := range ev {
			if !slices.Contains(base, k) && !fs.has(k) {
				return fmt.Errorf("%s carries non-standard field %q", typ, k)
			}
		}
	}
	return nil
}

func checkOutcome(o any, strict bool) error {
	m, ok := o.(map[string]any)
	if !ok {
		return fmt.Errorf("outcome is %T", o)
	}
	allowed := []string{"type"}
	switch m["type"] {
	case "success":
		allowed = append(allowed, "pendingToolCallIds")
		if ids, ok := m["pendingToolCallIds"]; ok {
			list, isList := ids.([]any)
			if !isList {
				return fmt.Errorf("pendingToolCallIds is %T", ids)
			}
			for _, id := range list {
				if _, isString := id.(string); !isString {
					return fmt.Errorf("pendingToolCallIds holds %T", id)
				}
			}
		}
	case "cancelled":
	case "interrupt":
		allowed = append(allowed, "interrupts")
		list, ok := m["interrupts"].([]any)
		if !ok || len(list) == 0 {
			return fmt.Errorf("interrupt outcome without interrupts")
		}
		seen := map[any]bool{}
		for _, it := range list {
			in, ok := it.(map[string]any)
			if !ok || in["id"] == nil || in["reason"] == nil {
				return fmt.Errorf("interrupt %v lacks id or reason", it)
			}
			if seen[in["id"]] {
				return fmt.Errorf("duplicate interrupt id %v", in["id"])
			}
			seen[in["id"]] = true
			for k := range in {
				if !slices.Contains(interruptFields, k) {
					return fmt.Errorf("interrupt carries %q", k)
				}
			}
		}
	default:
		return fmt.Errorf("outcome type %v", m["type"])
	}
	if strict {
		for k := range m {
			if !slices.Contains(allowed, k) {
				return fmt.Errorf("%v outcome carries %q", m["type"], k)
			}
		}
	}
	return nil
}

func (fs fieldSet) has(k string) bool {
	return slices.Contains(fs.required, k) || slices.Contains(fs.optional, k)
}

func mustInt(n json.Number) int64 { i, _ := n.Int64(); return i }

// Verifier follows @ag-ui/client 1.0's verifyEvents: the ordering rules a
// real client enforces, fatal on the first violation. It is stricter in one
// point: RUN_FINISHED must name the run RUN_STARTED opened.
type Verifier struct {
	started, finished, errored bool
	seen                       bool
	runID, threadID            string
	messages, calls, steps     map[string]bool
	spans, reasoning           map[string]bool
}

// NewVerifier returns a verifier expecting a stream's first event.
func NewVerifier() *Verifier { return &Verifier{} }

func (v *Verifier) reset() {
	v.messages, v.calls, v.steps = map[string]bool{}, map[string]bool{}, map[string]bool{}
	v.spans, v.reasoning = map[string]bool{}, map[string]bool{}
	v.finished, v.errored, v.started = false, false, true
}

// RunID is the run the last RUN_STARTED opened.
func (v *Verifier) RunID() string { return v.runID }

// Check takes the next event, reporting the first rule it breaks.
func (v *Verifier) Check(ev map[string]any) error {
	typ, _ := ev["type"].(string)
	str := func(k string) string { s, _ := ev[k].(string); return s }
	if v.errored && typ != "RUN_STARTED" {
		return fmt.Errorf("%s after RUN_ERROR", typ)
	}
	if v.finished && typ != "RUN_ERROR" && typ != "RUN_STARTED" {
		return fmt.Errorf("%s after RUN_FINISHED", typ)
	}
	if !v.seen {
		v.seen = true
		if typ != "RUN_STARTED" && typ != "RUN_ERROR" {
			return fmt.Errorf("first event is %s", typ)
		}
	} else if typ == "RUN_STARTED" && v.started && !v.finished && !v.errored {
		return fmt.Errorf("RUN_STARTED while a run is active")
	}
	open := func(set map[string]bool, id, what string) error {
		if set[id] {
			return fmt.Errorf("%s %q already open", what, id)
		}
		set[id] = true
		return nil
	}
	need := func(set map[string]bool, id, what string) error {
		if !set[id] {
			return fmt.Errorf("%s: no open %s %q", typ, what, id)
		}
		return nil
	}
	closeIt := func(set map[string]bool, id, what string) error {
		if err := need(set, id, what); err != nil {
			return err
		}
		delete(set, id)
		return nil
	}
	switch typ {
	case "RUN_STARTED":
		v.reset()
		v.runID, v.threadID = str("runId"), str("threadId")
	case "RUN_FINISHED":
		if str("runId") != v.runID || str("threadId") != v.threadID {
			return fmt.Errorf("RUN_FINISHED for %s/%s, started %s/%s", str("threadId"), str("runId"), v.threadID, v.runID)
		}
		for what, set := range map[string]map[string]bool{"steps": v.steps, "messages": v.messages, "tool calls": v.calls, "reasoning messages": v.reasoning, "reasoning spans": v.spans} {
			if len(set) > 0 {
				return fmt.Errorf("RUN_FINISHED with %s open: %v", what, set)
			}
		}
		v.finished = true
	case "RUN_ERROR":
		v.errored = true
	case "TEXT_MESSAGE_START":
		return open(v.messages, str("messageId"), "text message")
	case "TEXT_MESSAGE_CONTENT":
		if str("delta") == "" {
			return fmt.Errorf("empty text delta")
		}
		return need(v.messages, str("messageId"), "text message")
	case "TEXT_MESSAGE_END":
		return closeIt(v.messages, str("messageId"), "text message")
	case "TOOL_CALL_START":
		return open(v.calls, str("toolCallId"), "tool call")
	case "TOOL_CALL_ARGS":
		return need(v.calls, str("toolCallId"), "tool call")
	case "TOOL_CALL_END":
		return closeIt(v.calls, str("toolCallId"), "tool call")
	case "STEP_STARTED":
		return open(v.steps, str("stepName"), "step")
	case "STEP_FINISHED":
		return closeIt(v.steps, str("stepName"), "step")
	case "REASONING_START":
		return open(v.spans, str("messageId"), "reasoning span")
	case "REASONING_MESSAGE_START":
		return open(v.reasoning, str("messageId"), "reasoning message")
	case "REASONING_MESSAGE_CONTENT":
		return need(v.reasoning, str("messageId"), "reasoning message")
	case "REASONING_MESSAGE_END":
		return closeIt(v.reasoning, str("messageId"), "reasoning message")
	case "REASONING_END":
		return closeIt(v.spans, str("messageId"), "reasoning span")
	}
	return nil
}

// Event is one decoded AG-UI frame.
type Event struct {
	ID   string // the SSE id ("" when the frame had none)
	Data map[string]any
}

// Type is the event's type.
func (e Event) Type() string { s, _ := e.Data["type"].(string); return s }

// Str reads a string field.
func (e Event) Str(k string) string { s, _ := e.Data[k].(string); return s }

// Decode checks every frame of an AG-UI stream (SSE framing, event name
// equal to type, an id on every frame when needID, JSON without null, the
// schema) and returns the events, keep-alive comments dropped.
func Decode(t testing.TB, stream []byte, strict, needID bool) []Event {
	t.Helper()
	var evs []Event
	for i, f := range ssetest.Parse(t, stream) {
		if f.Comment != "" || (f.Event == "" && f.Data == "") {
			continue
		}
		evs = append(evs, DecodeFrame(t, i, f.ID, f.Event, f.Data, strict, needID))
	}
	return evs
}

// DecodeFrame checks one frame as Decode does.
func DecodeFrame(t testing.TB, i int, id, name, data string, strict, needID bool) Event {
	t.Helper()
	dialecttest.NoNull(t, data)
	ev := dialecttest.Object(t, data)
	if name != ev["type"] || (needID && id == "") {
		t.Fatalf("frame %d: event %q id %q for type %v", i, name, id, ev["type"])
	}
	if err := CheckSchema(ev, strict); err != nil {
		t.Fatalf("frame %d: %v\n%s", i, err, data)
	}
	return Event{ID: id, Data: ev}
}

// Verify runs evs through a fresh Verifier, failing the test on the first
// violation.
func Verify(t testing.TB, evs []Event) {
	t.Helper()
	v := NewVerifier()
	for i, ev := range evs {
		if err := v.Check(ev.Data); err != nil {
			t.Fatalf("event %d (id %s): %v\n%v", i, ev.ID, err, ev.Data)
		}
	}
}

// VerifyStream decodes and verifies a whole stream.
func VerifyStream(t testing.TB, stream []byte, strict, needID bool) []Event {
	t.Helper()
	evs := Decode(t, stream, strict, needID)
	Verify(t, evs)
	return evs
}
