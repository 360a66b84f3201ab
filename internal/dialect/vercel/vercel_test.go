package vercel_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/dialect/dialecttest"
	"github.com/agentchat/agentchat/internal/dialect/vercel"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/ssetest"
)

var update = flag.Bool("update", false, "rewrite golden files")

var variants = []struct {
	name string
	opts vercel.Options
}{{"vercel", vercel.Options{}}, {"vercel-sdk5", vercel.Options{AISDK5: true}}}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, v := range variants {
		for _, name := range dialecttest.Names() {
			t.Run(v.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				got := dialecttest.Encode(vercel.NewEncoder(v.opts), dialecttest.Script(name))
				dialecttest.Golden(t, name+"."+v.name+".golden", got, *update)
				verify(t, got, v.opts.AISDK5)
			})
		}
	}
}

// chunkFields is the AI SDK's uiMessageChunkSchema: each chunk type's
// required and optional fields. Every object there is strict.
var chunkFields = map[string][2][]string{
	"text-start":            {{"id"}, {"providerMetadata"}},
	"text-delta":            {{"id", "delta"}, {"providerMetadata"}},
	"text-end":              {{"id"}, {"providerMetadata"}},
	"reasoning-start":       {{"id"}, {"providerMetadata"}},
	"reasoning-delta":       {{"id", "delta"}, {"providerMetadata"}},
	"reasoning-end":         {{"id"}, {"providerMetadata"}},
	"error":                 {{"errorText"}, nil},
	"tool-input-start":      {{"toolCallId", "toolName"}, {"providerExecuted", "providerMetadata", "dynamic", "title"}},
	"tool-input-delta":      {{"toolCallId", "inputTextDelta"}, nil},
	"tool-input-available":  {{"toolCallId", "toolName", "input"}, {"providerExecuted", "providerMetadata", "dynamic", "title"}},
	"tool-approval-request": {{"approvalId", "toolCallId"}, nil},
	"tool-output-available": {{"toolCallId", "output"}, {"providerExecuted", "dynamic", "preliminary"}},
	"tool-output-error":     {{"toolCallId", "errorText"}, {"providerExecuted", "dynamic"}},
	"tool-output-denied":    {{"toolCallId"}, nil},
	"source-document":       {{"sourceId", "mediaType", "title"}, {"filename", "providerMetadata"}},
	"start-step":            {nil, nil},
	"finish-step":           {nil, nil},
	"start":                 {nil, {"messageId", "messageMetadata"}},
	"finish":                {nil, {"finishReason", "messageMetadata"}},
}

var finishReasons = []string{"stop", "length", "content-filter", "tool-calls", "error", "other"}

// client follows the AI SDK's processUIMessageStream: the state a chunk
// needs before the client accepts it.
type client struct {
	text, reasoning   map[string]bool // open parts; finish-step forgets them
	partial, toolPart map[string]bool // tool-input-start seen; a tool part exists
}

func (c *client) check(ch map[string]any) error {
	typ := ch["type"].(string)
	id, _ := ch["id"].(string)
	call, _ := ch["toolCallId"].(string)
	need := func(set map[string]bool, key, what string) error {
		if !set[key] {
			return fmt.Errorf("%s for missing %s %q", typ, what, key)
		}
		return nil
	}
	switch typ {
	case "text-start":
		c.text[id] = true
	case "text-delta":
		return need(c.text, id, "text part")
	case "text-end":
		if err := need(c.text, id, "text part"); err != nil {
			return err
		}
		delete(c.text, id)
	case "reasoning-start":
		c.reasoning[id] = true
	case "reasoning-delta":
		return need(c.reasoning, id, "reasoning part")
	case "reasoning-end":
		if err := need(c.reasoning, id, "reasoning part"); err != nil {
			return err
		}
		delete(c.reasoning, id)
	case "finish-step":
		c.text, c.reasoning = map[string]bool{}, map[string]bool{}
	case "tool-input-start":
		c.partial[call], c.toolPart[call] = true, true
	case "tool-input-delta":
		return need(c.partial, call, "tool call")
	case "tool-input-available":
		c.toolPart[call] = true
	case "tool-approval-request", "tool-output-available", "tool-output-error", "tool-output-denied":
		return need(c.toolPart, call, "tool invocation")
	}
	return nil
}

// verify checks a whole stream as the AI SDK client reads it.
func verify(t *testing.T, stream []byte, sdk5 bool) []map[string]any {
	t.Helper()
	c := &client{map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}}
	frames := ssetest.Parse(t, stream)
	var chunks []map[string]any
	for i, f := range frames {
		if f.HasEvent {
			t.Fatalf("frame %d has an event field %q", i, f.Event)
		}
		if f.Data == "[DONE]" {
			if i != len(frames)-1 {
				t.Fatalf("[DONE] at frame %d of %d", i, len(frames))
			}
			continue
		}
		dialecttest.NoNull(t, f.Data)
		ch := dialecttest.Object(t, f.Data)
		typ, _ := ch["type"].(string)
		if i == 0 && typ != "start" {
			t.Fatalf("first chunk is %q", typ)
		}
		if err := checkChunk(ch, sdk5); err != nil {
			t.Fatalf("frame %d: %v\n%s", i, err, f.Data)
		}
		if err := c.check(ch); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		chunks = append(chunks, ch)
	}
	return chunks
}

func checkChunk(ch map[string]any, sdk5 bool) error {
	typ, _ := ch["type"].(string)
	allowed := []string{"type"}
	if strings.HasPrefix(typ, "data-") {
		if _, ok := ch["data"]; !ok {
			return fmt.Errorf("%s without data", typ)
		}
		allowed = append(allowed, "id", "data", "transient")
	} else {
		fs, ok := chunkFields[typ]
		if !ok {
			return fmt.Errorf("unknown chunk type %q", typ)
		}
		for _, k := range fs[0] {
			if _, ok := ch[k]; !ok {
				return fmt.Errorf("%s without %s", typ, k)
			}
		}
		allowed = append(append(allowed, fs[0]...), fs[1]...)
	}
	for k := range ch {
		if !slices.Contains(allowed, k) {
			return fmt.Errorf("%s carries %q, which the strict schema refuses", typ, k)
		}
	}
	if r, ok := ch["finishReason"]; ok {
		if sdk5 {
			return fmt.Errorf("finishReason sent to an AI SDK 5 client")
		}
		if !slices.Contains(finishReasons, r.(string)) {
			return fmt.Errorf("finishReason %v", r)
		}
	}
	if sdk5 && (typ == "tool-approval-request" || typ == "tool-output-denied") {
		return fmt.Errorf("%s sent to an AI SDK 5 client", typ)
	}
	return nil
}

func stamp(run string, ps ...event.Payload) []event.Event {
	var evs []event.Event
	for i, p := range ps {
		evs = append(evs, event.Event{Thread: "conv", Run: run, Seq: int64(i + 1), Time: dialecttest.T0, Type: p.EventType(), Payload: p})
	}
	return evs
}

func types(chunks []map[string]any) []string {
	var out []string
	for _, ch := range chunks {
		out = append(out, ch["type"].(string))
	}
	return out
}

func TestAwaitingAndResume(t *testing.T) {
	t.Parallel()
	chunks := verify(t, dialecttest.Encode(vercel.NewEncoder(vercel.Options{}), dialecttest.Script(dialecttest.Rich)), false)
	got := strings.Join(types(chunks), " ")
	want := "tool-input-available tool-input-available tool-approval-request data-tool.awaiting_input finish-step finish " +
		"tool-output-available start tool-output-error start-step"
	if !strings.Contains(got, want) {
		t.Errorf("chunks %s\nwant a run of %s", got, want)
	}
	var starts, finishes []string
	for _, ch := range chunks {
		switch ch["type"] {
		case "start":
			starts = append(starts, ch["messageId"].(string))
		case "finish":
			finishes = append(finishes, ch["finishReason"].(string))
		case "tool-approval-request":
			if ch["approvalId"] != "conf-1" || ch["toolCallId"] != "call-2" {
				t.Errorf("approval %v", ch)
			}
		case "data-tool.awaiting_input":
			d := ch["data"].(map[string]any)
			if d["confirmationId"] != "conf-1" || d["toolCallId"] != "call-2" || ch["id"] != "conf-1" {
				t.Errorf("awaiting data %v", ch)
			}
		case "data-conversation.created":
			if ch["data"].(map[string]any)["conversationId"] != "conv-1" {
				t.Errorf("conversation data %v", ch)
			}
		}
	}
	if !slices.Equal(starts, []string{"run-1", "run-1"}) || !slices.Equal(finishes, []string{"tool-calls", "stop"}) {
		t.Errorf("starts %v finishes %v", starts, finishes)
	}
}

func TestFixedMessageIDAndFinishReasons(t *testing.T) {
	t.Parallel()
	for status, reason := range map[string]string{event.StatusSucceeded: "stop", event.StatusFailed: "error", event.StatusCancelled: "other"} {
		chunks := verify(t, dialecttest.Encode(vercel.NewEncoder(vercel.Options{MessageID: "msg-fixed"}), stamp("r",
			event.RunStartedData{}, event.IterationData{}, event.TextDeltaData{MessageID: "m", Delta: "hi"},
			event.RunFinishedData{Status: status})), false)
		want := []string{"start", "start-step", "text-start", "text-delta", "text-end", "finish-step", "finish"}
		if got := types(chunks); !slices.Equal(got, want) {
			t.Errorf("%s: %v", status, got)
		}
		if chunks[0]["messageId"] != "msg-fixed" || chunks[len(chunks)-1]["finishReason"] != reason {
			t.Errorf("%s: start %v finish %v", status, chunks[0], chunks[len(chunks)-1])
		}
	}
}

func TestToolOutcomes(t *testing.T) {
	t.Parallel()
	args := json.RawMessage(`{"q":1}`)
	evs := stamp("r",
		event.RunStartedData{},
		event.ToolCallReadyData{ToolCallID: "a", Name: "t", Args: args},
		event.ToolResultData{ToolCallID: "a", Name: "t", Status: event.ToolSuccess, Content: "plain text"},
		// No tool-input-* was seen for b: the output must not reach the client first.
		event.ToolResultData{ToolCallID: "b", Name: "t", Args: args, Status: event.ToolFailure, Denied: true, Content: "declined"},
		event.ToolResultData{ToolCallID: "c", Name: "t", Args: json.RawMessage(`null`), Status: event.ToolSuccess, Output: json.RawMessage(`null`), Content: "x"},
	)
	chunks := verify(t, dialecttest.Encode(vercel.NewEncoder(vercel.Options{}), evs), false)
	want := []string{"start", "tool-input-available", "tool-output-available", "tool-input-available", "tool-output-denied",
		"tool-input-available", "tool-output-available"}
	if got := types(chunks); !slices.Equal(got, want) {
		t.Fatalf("%v", got)
	}
	if chunks[2]["output"] != "plain text" || chunks[6]["output"] != "x" {
		t.Errorf("outputs %v %v", chunks[2], chunks[6])
	}
	chunks = verify(t, dialecttest.Encode(vercel.NewEncoder(vercel.Options{AISDK5: true}), evs), true)
	if chunks[4]["type"] != "tool-output-error" || chunks[4]["errorText"] == "" {
		t.Errorf("sdk5 denial %v", chunks[4])
	}
}

func TestJoinMidRun(t *testing.T) {
	t.Parallel()
	script := dialecttest.Script(dialecttest.Rich)
	for from := range script {
		for _, v := range variants {
			stream := dialecttest.Encode(vercel.NewEncoder(v.opts), script[from:])
			if len(stream) > 0 {
				verify(t, stream, v.opts.AISDK5)
			}
		}
	}
}

func TestKeepAliveAndAbort(t *testing.T) {
	t.Parallel()
	enc := vercel.NewEncoder(vercel.Options{})
	if got := string(enc.KeepAlive(nil, time.Now())); got != ": keep-alive\n\n" {
		t.Errorf("keep-alive %q", got)
	}
	if got := string(enc.Abort(nil, event.ErrorInfo{Code: "slow_client", Message: "Reconnect."})); got != "data: {\"type\":\"error\",\"errorText\":\"Reconnect.\"}\n\n" {
		t.Errorf("abort %q", got)
	}
}

func BenchmarkEncodeVercel(b *testing.B) {
	evs := dialecttest.LongRun(1000)
	var dst []byte
	b.ReportAllocs()
	for b.Loop() {
		enc := vercel.NewEncoder(vercel.Options{})
		for _, ev := range evs {
			dst = enc.Encode(dst[:0], ev)
		}
	}
}

func TestZeroPayloadsVerify(t *testing.T) {
	t.Parallel()
	for _, v := range variants {
		verify(t, dialecttest.Encode(vercel.NewEncoder(v.opts), dialecttest.ZeroEvents()), v.opts.AISDK5)
	}
}

func TestExplicitPause(t *testing.T) {
	t.Parallel()
	script := dialecttest.Script(dialecttest.Rich)
	resumed := slices.IndexFunc(script, func(ev event.Event) bool { return ev.Type == event.RunResumed })

	// The response up to the pause: the concurrent call's result comes
	// before the finish, which Pause writes last.
	enc := vercel.NewEncoder(vercel.Options{ExplicitPause: true})
	stream := dialecttest.Encode(enc, script[:resumed])
	stream = enc.Pause(stream)
	chunks := verify(t, stream, false)
	got := types(chunks)
	want := []string{"tool-input-available", "tool-input-available", "tool-approval-request", "data-tool.awaiting_input",
		"tool-output-available", "finish-step", "finish"}
	if !slices.Equal(got[len(got)-len(want):], want) || slices.Index(got, "finish") != len(got)-1 {
		t.Fatalf("chunks %v\nwant them to end with %v", got, want)
	}
	if chunks[len(chunks)-1]["finishReason"] != "tool-calls" {
		t.Errorf("finish %v", chunks[len(chunks)-1])
	}

	// A replay of the whole run is one message: one start, one finish.
	chunks = verify(t, dialecttest.Encode(vercel.NewEncoder(vercel.Options{ExplicitPause: true}), script), false)
	var starts, finishes int
	for _, ch := range chunks {
		switch ch["type"] {
		case "start":
			starts++
		case "finish":
			finishes++
		}
	}
	if starts != 1 || finishes != 1 || chunks[len(chunks)-1]["finishReason"] != "stop" {
		t.Errorf("replay has %d starts and %d finishes, last %v", starts, finishes, chunks[len(chunks)-1])
	}

	// The continuation after a decision opens the same message again.
	enc = vercel.NewEncoder(vercel.Options{ExplicitPause: true, MessageID: "run-1"})
	chunks = verify(t, dialecttest.Encode(enc, script[resumed:]), false)
	if got := types(chunks); chunks[0]["messageId"] != "run-1" || !slices.Equal(got[:3], []string{"start", "tool-input-available", "tool-output-error"}) {
		t.Errorf("continuation starts %v (%v)", got, chunks[0])
	}

	// Pause on a stream with no open message writes nothing.
	if got := vercel.NewEncoder(vercel.Options{ExplicitPause: true}).Pause(nil); len(got) != 0 {
		t.Errorf("pause without a message: %q", got)
	}
}

// Every chunk has its own id, and a client that resumes after any chunk gets
// exactly the chunks after it: the encoder in both variants, and the chat
// response's exchange, whose tail when the run pauses (finish-step, finish,
// [DONE], written once the stream is idle) is numbered after the event it
// follows, [DONE] last with the bare seq.
func TestResumeAfterEveryFrame(t *testing.T) {
	t.Parallel()
	encs := map[string]func() dialect.Encoder{
		"vercel":      func() dialect.Encoder { return vercel.NewEncoder(vercel.Options{}) },
		"vercel-sdk5": func() dialect.Encoder { return vercel.NewEncoder(vercel.Options{AISDK5: true}) },
		"exchange":    func() dialect.Encoder { return vercel.NewExchange(vercel.ExchangeOptions{}) },
	}
	for encName, newEnc := range encs {
		for _, name := range dialecttest.Names() {
			t.Run(encName+"/"+name, func(t *testing.T) {
				t.Parallel()
				dialecttest.CheckResume(t, newEnc, dialecttest.Script(name))
			})
		}
	}
	// The tail's ids, for the script that ends paused.
	frames := ssetest.Parse(t, dialecttest.Stream(vercel.NewExchange(vercel.ExchangeOptions{}), dialecttest.Script(dialecttest.Awaiting)))
	var tail []string
	for _, f := range frames[len(frames)-3:] {
		tail = append(tail, f.ID+" "+f.Data)
	}
	if want := []string{`9.3 {"type":"finish-step"}`, `9.4 {"type":"finish","finishReason":"tool-calls"}`, `9 [DONE]`}; !slices.Equal(tail, want) {
		t.Errorf("tail %q, want %q", tail, want)
	}
}
