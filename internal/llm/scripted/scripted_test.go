package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/scripted"
)

var allTools = []llm.ToolSpec{
	{Name: scripted.ToolCurrentTime}, {Name: scripted.ToolCalculator}, {Name: scripted.ToolHTTPGet},
	{Name: scripted.ToolFeishu}, {Name: scripted.ToolWebhook},
}

// fast is the model without pacing, for tests about content.
func fast() *scripted.Model { return scripted.New(scripted.Config{TokenDelay: -1}) }

func user(text string) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}, Tools: allTools}
}

func chunks(t *testing.T, m llm.Model, req llm.Request) []llm.Chunk {
	t.Helper()
	s, err := m.Stream(t.Context(), req)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	defer s.Close()
	var out []llm.Chunk
	for s.Next() {
		out = append(out, s.Chunk())
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return out
}

func collect(t *testing.T, m llm.Model, req llm.Request) *llm.Accumulator {
	t.Helper()
	var a llm.Accumulator
	for _, c := range chunks(t, m, req) {
		a.Add(c)
	}
	return &a
}

type wantCall struct {
	name string
	args map[string]string
}

func TestToolRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		calls []wantCall
	}{
		{"what time is it?", []wantCall{{"get_current_time", map[string]string{"timezone": "UTC"}}}},
		{"What's the time in Tokyo", []wantCall{{"get_current_time", map[string]string{"timezone": "Asia/Tokyo"}}}},
		{"check the clock for Asia/Shanghai", []wantCall{{"get_current_time", map[string]string{"timezone": "Asia/Shanghai"}}}},
		{"time in America/Argentina/Buenos_Aires please", []wantCall{{"get_current_time", map[string]string{"timezone": "America/Argentina/Buenos_Aires"}}}},
		{"what time is it in New York", []wantCall{{"get_current_time", map[string]string{"timezone": "America/New_York"}}}},
		{"现在北京时间几点", []wantCall{{"get_current_time", map[string]string{"timezone": "Asia/Shanghai"}}}},
		{"calculate 2+2", []wantCall{{"calculator", map[string]string{"expression": "2+2"}}}},
		{"Compute (3 + 4) * 5 for me", []wantCall{{"calculator", map[string]string{"expression": "(3 + 4) * 5"}}}},
		{"what is 12 × 3?", []wantCall{{"calculator", map[string]string{"expression": "12 * 3"}}}},
		{"fetch https://example.com/a?b=1.", []wantCall{{"http_get", map[string]string{"url": "https://example.com/a?b=1"}}}},
		{"please GET http://localhost:8080/health", []wantCall{{"http_get", map[string]string{"url": "http://localhost:8080/health"}}}},
		{`send a feishu message "hello team"`, []wantCall{{"send_feishu_message", map[string]string{"text": "hello team"}}}},
		{"send to lark saying the build is green", []wantCall{{"send_feishu_message", map[string]string{"text": "the build is green"}}}},
		{"Send feishu: deploy done", []wantCall{{"send_feishu_message", map[string]string{"text": "deploy done"}}}},
		{"send feishu ping", []wantCall{{"send_feishu_message", map[string]string{"text": "send feishu ping"}}}},
		{"发飞书消息“你好”", []wantCall{{"send_feishu_message", map[string]string{"text": "你好"}}}},
		{"send the webhook saying 2 < 3 & ok", []wantCall{{"send_webhook", map[string]string{"text": "2 < 3 & ok"}}}},
		{"what time is it and calculate 2+2", []wantCall{
			{"get_current_time", map[string]string{"timezone": "UTC"}},
			{"calculator", map[string]string{"expression": "2+2"}},
		}},
		{"calculate 6*7 and tell me the time in London", []wantCall{
			{"calculator", map[string]string{"expression": "6*7"}},
			{"get_current_time", map[string]string{"timezone": "Europe/London"}},
		}},
		{"loop forever", []wantCall{{"get_current_time", map[string]string{"timezone": "UTC"}}}},
		// No rule: a plain answer.
		{"hello there", nil},
		{"what is love", nil},
		{"sometimes I wonder", nil},
		{"get me a coffee", nil},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			cs := chunks(t, fast(), user(tt.in))
			var a llm.Accumulator
			for _, c := range cs {
				a.Add(c)
			}
			calls := a.ToolCalls()
			if len(calls) != len(tt.calls) {
				t.Fatalf("calls = %+v, want %+v (text %q)", calls, tt.calls, a.Text())
			}
			for i, c := range calls {
				var args map[string]string
				if err := json.Unmarshal(c.Arguments, &args); err != nil {
					t.Fatalf("call %d arguments %s: %v", i, c.Arguments, err)
				}
				if c.Name != tt.calls[i].name || !reflect.DeepEqual(args, tt.calls[i].args) {
					t.Errorf("call %d = %s %s, want %s %v", i, c.Name, c.Arguments, tt.calls[i].name, tt.calls[i].args)
				}
			}
			if len(tt.calls) > 0 {
				if a.FinishReason() != "tool_calls" || a.Text() != "" {
					t.Errorf("finish %q text %q, want tool_calls and no text", a.FinishReason(), a.Text())
				}
				checkToolDeltas(t, cs)
			} else {
				if a.FinishReason() != "stop" || !strings.Contains(a.Text(), "offline demo model") {
					t.Errorf("finish %q text %q, want stop and the demo answer", a.FinishReason(), a.Text())
				}
			}
			if u := a.Usage(); u == nil || u.OutputTokens == 0 || u.InputTokens == 0 {
				t.Errorf("usage = %+v, want word counts", u)
			}
		})
	}
}

// checkToolDeltas checks the shape providers stream: a first delta with ID
// and Name and no arguments, then two or more argument fragments.
func checkToolDeltas(t *testing.T, cs []llm.Chunk) {
	t.Helper()
	frags := map[int]int{}
	for _, c := range cs {
		d := c.ToolCall
		if d == nil {
			continue
		}
		if d.ID != "" {
			if d.Name == "" || d.ArgsDelta != "" || frags[d.Index] != 0 {
				t.Errorf("first delta %+v: want ID and Name only, before fragments", d)
			}
			if !strings.HasPrefix(d.ID, "call_") {
				t.Errorf("ID %q, want call_…", d.ID)
			}
			continue
		}
		frags[d.Index]++
	}
	for i, n := range frags {
		if n < 2 {
			t.Errorf("call %d arguments in %d fragments, want 2 or more", i, n)
		}
	}
}

func TestRulesNeedOfferedTools(t *testing.T) {
	t.Parallel()
	req := user("what time is it and calculate 2+2")
	req.Tools = []llm.ToolSpec{{Name: scripted.ToolCalculator}}
	a := collect(t, fast(), req)
	if calls := a.ToolCalls(); len(calls) != 1 || calls[0].Name != "calculator" || !strings.HasSuffix(calls[0].ID, "_0") {
		t.Fatalf("calls = %+v, want only calculator, index 0", calls)
	}

	req.Tools = nil
	a = collect(t, fast(), req)
	if len(a.ToolCalls()) != 0 {
		t.Fatalf("calls = %+v without tools", a.ToolCalls())
	}
	for _, want := range []string{
		`I received your message: "what time is it and calculate 2+2".`,
		"get_current_time tool for that, but it is not available here",
		scripted.DefaultHint,
	} {
		if !strings.Contains(a.Text(), want) {
			t.Errorf("text %q lacks %q", a.Text(), want)
		}
	}
}

func TestPlainAnswer(t *testing.T) {
	t.Parallel()
	m := scripted.New(scripted.Config{TokenDelay: -1, Hint: "Configure AGENTCHAT_LLM_KEY."})
	cs := chunks(t, m, user("Hello, world"))
	want := `I'm agentchat's offline demo model, so I can't really think, but I received your message: "Hello, world". Configure AGENTCHAT_LLM_KEY.`
	var text strings.Builder
	for i, c := range cs[:len(cs)-2] {
		if c.Text == "" || (i > 0 && !strings.HasPrefix(c.Text, " ")) || strings.Count(strings.TrimSpace(c.Text), " ") > 0 {
			t.Fatalf("chunk %d = %+v, want one word with its leading space", i, c)
		}
		text.WriteString(c.Text)
	}
	if text.String() != want {
		t.Errorf("text = %q, want %q", text.String(), want)
	}
	if c := cs[len(cs)-2]; c.FinishReason != "stop" {
		t.Errorf("second to last chunk %+v, want finish stop", c)
	}
	if c := cs[len(cs)-1]; c.Usage == nil || c.Usage.InputTokens != 2 || c.Usage.OutputTokens != len(cs)-2 {
		t.Errorf("last chunk %+v, want usage 2 in, %d out", c, len(cs)-2)
	}
}

func TestJSONObject(t *testing.T) {
	t.Parallel()
	req := user("hi")
	req.JSONObject = true
	a := collect(t, fast(), req)
	var v struct{ Answer string }
	if err := json.Unmarshal([]byte(a.Text()), &v); err != nil || !strings.Contains(v.Answer, `"hi"`) {
		t.Fatalf("text %q: want a JSON object with the answer (%v)", a.Text(), err)
	}
}

func TestThink(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"think about the weather", "think: what time is it"} {
		cs := chunks(t, fast(), user(in))
		var reasoning int
		for i, c := range cs {
			if c.Reasoning != "" {
				reasoning++
				if i != reasoning-1 {
					t.Fatalf("%q: reasoning chunk %d after other chunks", in, i)
				}
			}
		}
		if reasoning < 2 {
			t.Errorf("%q: %d reasoning chunks, want a few before the answer", in, reasoning)
		}
		if u := cs[len(cs)-1].Usage; u == nil || u.ReasoningTokens != reasoning {
			t.Errorf("%q: usage %+v, want %d reasoning tokens", in, u, reasoning)
		}
	}
}

func TestFailPlease(t *testing.T) {
	t.Parallel()
	_, err := fast().Stream(t.Context(), user("fail please"))
	var lerr *llm.Error
	if !errors.As(err, &lerr) || lerr.Code != llm.CodeUnavailable || !lerr.Retryable() {
		t.Fatalf("err = %v, want a retryable %s *llm.Error", err, llm.CodeUnavailable)
	}
}

func toolTurn(userText string, calls []llm.ToolCall, results ...llm.Message) llm.Request {
	msgs := []llm.Message{
		{Role: llm.RoleUser, Content: userText},
		{Role: llm.RoleAssistant, ToolCalls: calls},
	}
	return llm.Request{Messages: append(msgs, results...), Tools: allTools}
}

func TestSummarisesToolResults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		call    llm.ToolCall
		content string
		want    string
	}{
		{"time json", llm.ToolCall{ID: "c1", Name: "get_current_time", Arguments: json.RawMessage(`{"timezone":"Asia/Tokyo"}`)},
			`{"time":"2025-01-02T03:04:05+09:00"}`, "The current time in Asia/Tokyo is 2025-01-02T03:04:05+09:00."},
		{"time text", llm.ToolCall{ID: "c1", Name: "get_current_time", Arguments: json.RawMessage(`{"timezone":"UTC"}`)},
			"2025-01-01 12:00:00", "The current time in UTC is 2025-01-01 12:00:00."},
		{"calculator", llm.ToolCall{ID: "c1", Name: "calculator", Arguments: json.RawMessage(`{"expression":"2+2"}`)},
			`{"result":4}`, "The result is 4."},
		{"calculator text", llm.ToolCall{ID: "c1", Name: "calculator"}, "4", "The result is 4."},
		{"feishu sent", llm.ToolCall{ID: "c1", Name: "send_feishu_message"}, `{"ok":true}`, "Done: the Feishu message was sent."},
		{"feishu declined", llm.ToolCall{ID: "c1", Name: "send_feishu_message"}, "The user declined this call.", "Okay, I did not send it."},
		{"webhook rejected", llm.ToolCall{ID: "c1", Name: "send_webhook"}, "rejected by a person", "Okay, I did not send it."},
		{"webhook sent", llm.ToolCall{ID: "c1", Name: "send_webhook"}, "delivered", "Done: the webhook was sent."},
		{"http_get", llm.ToolCall{ID: "c1", Name: "http_get", Arguments: json.RawMessage(`{"url":"https://example.com"}`)},
			"<html>hi</html>", "I fetched https://example.com: <html>hi</html>"},
		{"failure", llm.ToolCall{ID: "c1", Name: "calculator"}, `{"error":"division by zero"}`, "The calculator tool failed: division by zero."},
		{"unknown tool", llm.ToolCall{ID: "c1", Name: "lookup"}, "42 rows", "The lookup tool returned: 42 rows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := toolTurn("do it", []llm.ToolCall{tt.call}, llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Content: tt.content})
			a := collect(t, fast(), req)
			if a.Text() != tt.want || a.FinishReason() != "stop" || len(a.ToolCalls()) != 0 {
				t.Errorf("text %q finish %q calls %d, want %q stop 0", a.Text(), a.FinishReason(), len(a.ToolCalls()), tt.want)
			}
		})
	}

	t.Run("parallel results", func(t *testing.T) {
		t.Parallel()
		req := toolTurn("what time is it and calculate 2+2", []llm.ToolCall{
			{ID: "a", Name: "get_current_time", Arguments: json.RawMessage(`{"timezone":"UTC"}`)},
			{ID: "b", Name: "calculator", Arguments: json.RawMessage(`{"expression":"2+2"}`)},
		},
			llm.Message{Role: llm.RoleTool, ToolCallID: "a", Content: "12:00"},
			llm.Message{Role: llm.RoleTool, ToolCallID: "b", Content: "4"},
		)
		if got, want := collect(t, fast(), req).Text(), "The current time in UTC is 12:00. The result is 4."; got != want {
			t.Errorf("text %q, want %q", got, want)
		}
	})
}

func TestLoopForever(t *testing.T) {
	t.Parallel()
	first := collect(t, fast(), user("loop forever"))
	calls := first.ToolCalls()
	req := toolTurn("loop forever", calls, llm.Message{Role: llm.RoleTool, ToolCallID: calls[0].ID, Content: "12:00"})
	second := collect(t, fast(), req)
	again := second.ToolCalls()
	if len(again) != 1 || again[0].Name != "get_current_time" || second.FinishReason() != "tool_calls" {
		t.Fatalf("after a result: calls %+v finish %q, want get_current_time again", again, second.FinishReason())
	}
	if again[0].ID == calls[0].ID {
		t.Errorf("call ID %q repeated across turns", again[0].ID)
	}
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"what time is it and calculate 2+2", "think hello", `send feishu "x"`} {
		a, b := chunks(t, fast(), user(in)), chunks(t, scripted.New(scripted.Config{TokenDelay: -1}), user(in))
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%q: two runs differ:\n%+v\n%+v", in, a, b)
		}
	}
	x, y := collect(t, fast(), user("what time is it")), collect(t, fast(), user("what time is it now"))
	if x.ToolCalls()[0].ID == y.ToolCalls()[0].ID {
		t.Errorf("different requests share call ID %q", x.ToolCalls()[0].ID)
	}
}

// TestPacing runs in a synctest bubble, where timers are fake and advance
// only when every goroutine is blocked: the test is exact and instant.
func TestPacing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := scripted.New(scripted.Config{})
		start := time.Now()
		cs := chunks(t, m, user("hi"))
		paced := len(cs) - 2 // finish and usage are not paced
		if got, want := time.Since(start), time.Duration(paced)*15*time.Millisecond; got != want {
			t.Errorf("%d tokens took %v, want %v at the default 15ms", paced, got, want)
		}
	})
}

func TestCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		s, err := scripted.New(scripted.Config{TokenDelay: 100 * time.Millisecond}).Stream(ctx, user("hello there"))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if !s.Next() {
			t.Fatalf("first chunk: %v", s.Err())
		}
		start := time.Now()
		time.AfterFunc(30*time.Millisecond, cancel)
		if s.Next() {
			t.Fatalf("Next after cancel = true (%+v)", s.Chunk())
		}
		if !errors.Is(s.Err(), context.Canceled) {
			t.Errorf("Err = %v, want context.Canceled", s.Err())
		}
		if waited := time.Since(start); waited != 30*time.Millisecond {
			t.Errorf("Next returned %v after the wait began, want at the cancel (30ms), not the token (100ms)", waited)
		}
		if s.Next() {
			t.Error("Next after the error = true")
		}
	})
}

func TestDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 40*time.Millisecond)
		defer cancel()
		s, err := scripted.New(scripted.Config{}).Stream(ctx, user("hello there"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = llm.Collect(s)
		var lerr *llm.Error
		if !errors.As(err, &lerr) || lerr.Code != llm.CodeTimeout || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want a timeout *llm.Error wrapping DeadlineExceeded", err)
		}
	})
}

func TestCancelledBeforeStream(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := fast().Stream(ctx, user("hi")); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestCloseStops(t *testing.T) {
	t.Parallel()
	s, err := fast().Stream(t.Context(), user("hello there"))
	if err != nil {
		t.Fatal(err)
	}
	s.Next()
	s.Close()
	if s.Next() || s.Err() != nil {
		t.Fatalf("after Close: Next true or Err %v", s.Err())
	}
	s.Close() // twice is fine
}

func TestName(t *testing.T) {
	t.Parallel()
	if got := fast().Name(); got != "scripted (offline demo model)" {
		t.Errorf("Name() = %q", got)
	}
}

// A chart's values are the numbers of the chart request, never those of
// another request in the same message (issue 26: "12*(3+4) and make a
// chart … of 3, 5, 9, 4" charted 7 points).
func TestChartValuesComeFromTheChartRequest(t *testing.T) {
	t.Parallel()
	tools := append(slices.Clone(allTools), llm.ToolSpec{Name: scripted.ToolChart})
	tests := []struct {
		in    string
		calls []wantCall
	}{
		{`make a chart "Sales" of 3, 5, 9, 4`, []wantCall{{"make_chart", map[string]string{"title": "Sales", "values": "3,5,9,4"}}}},
		{`what is 12*(3+4) and make a chart "Sales" of 3, 5, 9, 4`, []wantCall{
			{"calculator", map[string]string{"expression": "12*(3+4)"}},
			{"make_chart", map[string]string{"title": "Sales", "values": "3,5,9,4"}},
		}},
		{`chart "Q3 2024" of 1.5, -2, 8 then what time is it in Tokyo`, []wantCall{
			{"make_chart", map[string]string{"title": "Q3 2024", "values": "1.5,-2,8"}},
			{"get_current_time", map[string]string{"timezone": "Asia/Tokyo"}},
		}},
		{`calculate 6*7, and 3, 5 and 9 as a chart`, []wantCall{
			{"calculator", map[string]string{"expression": "6*7"}},
			{"make_chart", map[string]string{"title": "Chart", "values": "3,5,9"}},
		}},
		{`send feishu "hi" and make a chart "Visits" of 10 20 30`, []wantCall{
			{"send_feishu_message", map[string]string{"text": "hi"}},
			{"make_chart", map[string]string{"title": "Visits", "values": "10,20,30"}},
		}},
		{`画一个图表“销量”：3，5，9，4`, []wantCall{{"make_chart", map[string]string{"title": "销量", "values": "3,5,9,4"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			a := collect(t, fast(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: tt.in}}, Tools: tools})
			calls := a.ToolCalls()
			if len(calls) != len(tt.calls) {
				t.Fatalf("calls = %+v, want %+v", calls, tt.calls)
			}
			for i, c := range calls {
				var args map[string]string
				if err := json.Unmarshal(c.Arguments, &args); err != nil {
					t.Fatal(err)
				}
				if c.Name != tt.calls[i].name || !reflect.DeepEqual(args, tt.calls[i].args) {
					t.Errorf("call %d = %s %s, want %s %v", i, c.Name, c.Arguments, tt.calls[i].name, tt.calls[i].args)
				}
			}
		})
	}
}

func TestNamedToolRule(t *testing.T) {
	t.Parallel()
	pick := llm.ToolSpec{Name: "pick_colour", Parameters: json.RawMessage(`{"type":"object","properties":{"count":{"type":"number"},"palette":{"type":"string"},"colour":{"type":"string"}},"required":["colour"]}`)}
	bare := llm.ToolSpec{Name: "clear_page", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}
	tools := append(slices.Clone(allTools), pick, bare)
	tests := []struct {
		text string
		want []wantCall
	}{
		{`Please call pick_colour with "teal"`, []wantCall{{"pick_colour", map[string]string{"colour": "teal"}}}},
		{`call pick_colour`, []wantCall{{"pick_colour", map[string]string{}}}},
		{`clear_page, then what time is it in Tokyo`, []wantCall{{"clear_page", map[string]string{}}, {"get_current_time", map[string]string{"timezone": "Asia/Tokyo"}}}},
		{`my_pick_colour_x is not a tool name`, nil},
		{`calculator alone is not a phrase`, nil},
	}
	for _, tt := range tests {
		a := collect(t, fast(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: tt.text}}, Tools: tools})
		var got []wantCall
		for _, c := range a.ToolCalls() {
			var args map[string]string
			if err := json.Unmarshal(c.Arguments, &args); err != nil {
				t.Fatalf("%q: arguments %s: %v", tt.text, c.Arguments, err)
			}
			got = append(got, wantCall{c.Name, args})
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: calls %+v, want %+v", tt.text, got, tt.want)
		}
	}
	// Its result is summarised like any tool's.
	a := collect(t, fast(), llm.Request{Tools: tools, Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "call pick_colour"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "pick_colour", Arguments: json.RawMessage(`{}`)}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Content: "teal"},
	}})
	if a.Text() != "The pick_colour tool returned: teal" {
		t.Errorf("summary %q", a.Text())
	}
}
