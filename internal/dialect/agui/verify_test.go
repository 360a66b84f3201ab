package agui_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/agentchat/agentchat/internal/dialect/dialecttest"
)

// fieldSet is what @ag-ui/core 1.0's schema allows on one event type, and
// which of those fields are required.
type fieldSet struct {
	required []string
	optional []string
}

var base = []string{"type", "timestamp", "rawEvent", "metadata"}

// schema mirrors @ag-ui/core 1.0's event schemas (sdks/typescript/packages/core).
var schema = map[string]fieldSet{
	"RUN_STARTED":               {[]string{"threadId", "runId"}, []string{"parentRunId", "input"}},
	"RUN_FINISHED":              {[]string{"threadId", "runId"}, []string{"result", "outcome"}},
	"RUN_ERROR":                 {[]string{"message"}, []string{"code"}},
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

// checkSchema reports what a strict 1.0 client would refuse in one event
// (missing or mistyped required fields) and, when strict, what it would
// strip (unknown fields).
func checkSchema(ev map[string]any, strict bool) error {
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
			if err := checkOutcome(o); err != nil {
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

func checkOutcome(o any) error {
	m, ok := o.(map[string]any)
	if !ok {
		return fmt.Errorf("outcome is %T", o)
	}
	switch m["type"] {
	case "success":
		return nil
	case "interrupt":
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
		return nil
	}
	return fmt.Errorf("outcome type %v", m["type"])
}

func (fs fieldSet) has(k string) bool {
	return slices.Contains(fs.required, k) || slices.Contains(fs.optional, k)
}

func mustInt(n json.Number) int64 { i, _ := n.Int64(); return i }

// verifier follows @ag-ui/client 1.0's verifyEvents: the ordering rules a
// real client enforces, fatal on the first violation.
type verifier struct {
	started, finished, errored bool
	first                      bool
	runID, threadID            string
	messages, calls, steps     map[string]bool
	spans, reasoning           map[string]bool
}

func newVerifier() *verifier { return &verifier{first: true} }

func (v *verifier) reset() {
	v.messages, v.calls, v.steps = map[string]bool{}, map[string]bool{}, map[string]bool{}
	v.spans, v.reasoning = map[string]bool{}, map[string]bool{}
	v.finished, v.errored, v.started = false, false, true
}

func (v *verifier) check(ev map[string]any) error {
	typ := ev["type"].(string)
	str := func(k string) string { s, _ := ev[k].(string); return s }
	if v.errored && typ != "RUN_STARTED" {
		return fmt.Errorf("%s after RUN_ERROR", typ)
	}
	if v.finished && typ != "RUN_ERROR" && typ != "RUN_STARTED" {
		return fmt.Errorf("%s after RUN_FINISHED", typ)
	}
	if v.first {
		v.first = false
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
		if err := need(v.messages, str("messageId"), "text message"); err != nil {
			return err
		}
		delete(v.messages, str("messageId"))
	case "TOOL_CALL_START":
		return open(v.calls, str("toolCallId"), "tool call")
	case "TOOL_CALL_ARGS":
		return need(v.calls, str("toolCallId"), "tool call")
	case "TOOL_CALL_END":
		if err := need(v.calls, str("toolCallId"), "tool call"); err != nil {
			return err
		}
		delete(v.calls, str("toolCallId"))
	case "STEP_STARTED":
		return open(v.steps, str("stepName"), "step")
	case "STEP_FINISHED":
		if err := need(v.steps, str("stepName"), "step"); err != nil {
			return err
		}
		delete(v.steps, str("stepName"))
	case "REASONING_START":
		return open(v.spans, str("messageId"), "reasoning span")
	case "REASONING_MESSAGE_START":
		return open(v.reasoning, str("messageId"), "reasoning message")
	case "REASONING_MESSAGE_CONTENT":
		return need(v.reasoning, str("messageId"), "reasoning message")
	case "REASONING_MESSAGE_END":
		if err := need(v.reasoning, str("messageId"), "reasoning message"); err != nil {
			return err
		}
		delete(v.reasoning, str("messageId"))
	case "REASONING_END":
		if err := need(v.spans, str("messageId"), "reasoning span"); err != nil {
			return err
		}
		delete(v.spans, str("messageId"))
	}
	return nil
}

// verifyStream checks every frame of an AG-UI stream: SSE framing, event
// name equal to type, schema, no null, and the client's ordering rules.
func verifyStream(t *testing.T, stream []byte, strict bool) []map[string]any {
	t.Helper()
	return verifyFrames(t, stream, strict, true)
}

// verifyFrames is verifyStream; needID false allows frames without an id
// (Abort's, which are not replayable).
func verifyFrames(t *testing.T, stream []byte, strict, needID bool) []map[string]any {
	t.Helper()
	v := newVerifier()
	var evs []map[string]any
	for i, f := range dialecttest.ParseSSE(t, stream) {
		if f.Comment != "" {
			continue
		}
		dialecttest.NoNull(t, f.Data)
		ev := dialecttest.Object(t, f.Data)
		if f.Event != ev["type"] || (needID && (!f.HasID || f.ID == "")) {
			t.Fatalf("frame %d: event %q id %q for type %v", i, f.Event, f.ID, ev["type"])
		}
		if err := checkSchema(ev, strict); err != nil {
			t.Fatalf("frame %d: %v\n%s", i, err, f.Data)
		}
		if err := v.check(ev); err != nil {
			t.Fatalf("frame %d: %v\n%s", i, err, f.Data)
		}
		evs = append(evs, ev)
	}
	return evs
}
