// Package scripted is agentchat's offline demo model: the model the server
// uses when no provider key is configured. It needs no network, costs
// nothing, and answers deterministically (the same request gives the same
// chunks, tool-call IDs included), so the whole product — streaming, tools,
// confirmation, failures — can be demonstrated and tested without a provider.
//
// It streams its answer word by word, each word with its leading space,
// pausing Config.TokenDelay before each, and stops promptly when ctx ends.
// Every answer ends with a finish reason and a usage chunk (word counts).
//
// # Phrase rules
//
// When the last message is the user's, its text (case-insensitive) is
// matched against these rules. A tool rule applies only when the request
// offers that tool; several tool rules may apply at once, giving parallel
// calls in the order their phrases appear (indices 0, 1, …).
//
//   - "fail please": Stream fails with an *llm.Error of code llm_unavailable.
//   - "loop forever": calls get_current_time {"timezone":"UTC"} on every
//     turn, tool results or not, to exercise the agent's iteration bound.
//   - "think" (or "thinking", 思考): a few Reasoning chunks come before the answer.
//   - "time", "clock", "what time" (or 几点, 时间): get_current_time
//     {"timezone": Z}, Z an IANA zone named in the text ("Asia/Shanghai"),
//     or the zone of a city named ("in Tokyo" → "Asia/Tokyo"), else "UTC".
//   - "calculate", "compute", "what is" or "what's" (or 计算) followed by an
//     arithmetic expression such as 2+2 or (3+4)*5: calculator {"expression": E}.
//   - "fetch" or "get" (or 获取) and an http(s) URL: http_get {"url": U}.
//   - "send" and "feishu" or "lark" (or 飞书): send_feishu_message {"text": T}.
//   - "send" and "webhook": send_webhook {"text": T}.
//   - "chart" (or 图表) and numbers: make_chart {"title": the first quoted
//     text of the chart's clause (else of the message, else "Chart"),
//     "values": the numbers of the chart's clause outside quotes,
//     comma-separated}. The clause runs from "chart" to the next phrase of
//     another rule, so "12*(3+4) and a chart of 3, 5, 9, 4" charts 3, 5, 9, 4;
//     when it holds no number ("3, 5 and 9 as a chart"), the text before
//     "chart", back to the previous rule's phrase, is read instead, less the
//     calculator's expression.
//   - "system prompt" (or 系统提示词): the answer is the system prompt it was sent.
//   - the name of any other offered tool, written as a word ("call
//     pick_colour"; a client's frontend tool, say): that tool, with the
//     first quoted text as its first string parameter (the schema's
//     required ones first) when the text has one, else {}. The built-in
//     tools above are only called by their phrases.
//
// A system message starting "Retrieved context" (package retrieval's) makes
// a plain answer quote its first hit: "According to [1] <source>: <text>".
// A request whose first message is the compaction prompt ("Summarise the
// conversation…") gets a deterministic summary of the transcript it carries.
//
// T is the first quoted text ("…", “…” or 「…」), else the text after
// "saying" or after a colon, else the whole message. For example "what time
// is it in Tokyo and calculate 2+2" calls get_current_time and calculator
// in one turn.
//
// Without a tool call, the answer says it comes from the offline demo model,
// quotes the user's message, notes any rule whose tool is not offered, and
// ends with Config.Hint.
//
// When the last messages are tool results, the answer summarises them, one
// sentence each: "The current time in UTC is …", "The result is 4.",
// "Done: the Feishu message was sent.", "Done: the webhook was sent.",
// "I fetched <url>: …"; a result saying the person declined, rejected or
// denied the call gives "Okay, I did not send it." (or "… did not run it.").
//
// With Request.JSONObject the answer text is a JSON object {"answer": …}.
//
// # Chain roles
//
// A request with Request.Schema named WorkflowPlan or CheckOutput is the
// chain engine's planner or checker; the model answers it with a fitting
// JSON object (see chain.go for the phrases that bend it: "invalid plan",
// "invalid plan once", "fail check once", "always fail check"). The
// executor is the agent loop, so the phrase rules above apply to it.
package scripted

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentchat/agentchat/internal/llm"
)

// Tool names the phrase rules call.
const (
	ToolCurrentTime = "get_current_time"
	ToolCalculator  = "calculator"
	ToolHTTPGet     = "http_get"
	ToolFeishu      = "send_feishu_message"
	ToolWebhook     = "send_webhook"
	ToolChart       = "make_chart"
)

// Config configures the scripted model. Zero values mean the default.
type Config struct {
	// TokenDelay is the pause before each streamed token, so the demo reads
	// like a real model typing. Default 15ms; negative: no pause.
	TokenDelay time.Duration
	// Hint is the last sentence of a plain answer, telling how to use a real
	// model. Default DefaultHint.
	Hint string
}

// DefaultTokenDelay is the default Config.TokenDelay.
const DefaultTokenDelay = 15 * time.Millisecond

// DefaultHint is the default Config.Hint.
const DefaultHint = "Set OPENAI_API_KEY (or ANTHROPIC_API_KEY) to use a real model."

// Model is the offline demo model. It is safe for concurrent use.
type Model struct {
	delay time.Duration
	hint  string
}

// New returns the offline demo model.
func New(cfg Config) *Model {
	delay := cmp.Or(cfg.TokenDelay, DefaultTokenDelay)
	if delay < 0 {
		delay = 0
	}
	return &Model{delay: delay, hint: cmp.Or(cfg.Hint, DefaultHint)}
}

// Name identifies the model in logs and run records.
func (m *Model) Name() string { return "scripted (offline demo model)" }

// Stream starts the scripted answer to req.
func (m *Model) Stream(ctx context.Context, req llm.Request) (llm.Stream, error) {
	if err := ctxError(ctx); err != nil {
		return nil, err
	}
	steps, err := m.script(req)
	if err != nil {
		return nil, err
	}
	return &stream{ctx: ctx, steps: steps, delay: m.delay}, nil
}

// step is one chunk of the script; paced chunks wait TokenDelay first.
type step struct {
	chunk llm.Chunk
	paced bool
}

// script decides the whole answer up front, so that it depends on the
// request alone.
func (m *Model) script(req llm.Request) ([]step, error) {
	offered := map[string]bool{}
	for _, t := range req.Tools {
		offered[t.Name] = true
	}
	named := namedTools(req.Tools)
	var (
		steps  []step
		finish = "stop"
		answer string
	)
	say := func(kind string, s string) {
		for _, w := range llm.SplitTokens(s) {
			c := llm.Chunk{Text: w}
			if kind == "reasoning" {
				c = llm.Chunk{Reasoning: w}
			}
			steps = append(steps, step{chunk: c, paced: true})
		}
	}

	var last llm.Message
	if n := len(req.Messages); n > 0 {
		last = req.Messages[n-1]
	}
	userText := textOf(lastOf(req.Messages, llm.RoleUser))
	lower := strings.ToLower(userText)
	loop := strings.Contains(lower, "loop forever") && offered[ToolCurrentTime]

	var calls []call
	structured, isStructured := structuredAnswer(req)
	summarising := len(req.Messages) > 0 && req.Messages[0].Role == llm.RoleSystem && strings.HasPrefix(req.Messages[0].Content, summaryPrefix)
	switch {
	case summarising:
		answer = summary(req)
	case isStructured:
		answer = structured
	case last.Role == llm.RoleUser:
		if strings.Contains(lower, "fail please") {
			return nil, &llm.Error{
				Code:    llm.CodeUnavailable,
				Message: `the offline demo model was asked to fail ("fail please")`,
			}
		}
		if thinkRe.MatchString(userText) {
			say("reasoning", "The user asked me to think, so let me reason step by step. I am a scripted model, so this reasoning is canned, but it streams like the real thing.")
		}
		var missing []string
		if loop {
			calls = []call{{name: ToolCurrentTime, args: map[string]string{"timezone": "UTC"}}}
		} else {
			calls, missing = match(userText, offered)
			calls = append(calls, named(userText)...)
			slices.SortStableFunc(calls, func(a, b call) int { return a.at - b.at })
		}
		if len(calls) == 0 {
			if a, ok := contextAnswer(req, userText); ok {
				answer = a
			} else {
				answer = m.plainAnswer(last, missing)
			}
		}
	case last.Role == llm.RoleTool:
		if loop {
			calls = []call{{name: ToolCurrentTime, args: map[string]string{"timezone": "UTC"}}}
		} else {
			answer = summarise(req.Messages)
		}
	default:
		answer = "I'm agentchat's offline demo model, and there is no new message for me to answer. " + m.hint
	}

	if len(calls) > 0 {
		id := requestHash(req)
		for i, c := range calls {
			args := c.json()
			steps = append(steps, step{paced: true, chunk: llm.Chunk{ToolCall: &llm.ToolCallDelta{
				Index: i, ID: fmt.Sprintf("call_%s_%d", id, i), Name: c.name,
			}}})
			for _, frag := range fragments(args) {
				steps = append(steps, step{paced: true, chunk: llm.Chunk{ToolCall: &llm.ToolCallDelta{Index: i, ArgsDelta: frag}}})
			}
		}
		finish = "tool_calls"
	} else {
		if req.JSONObject && !isStructured {
			b, _ := marshal(map[string]string{"answer": answer})
			answer = string(b)
		}
		say("text", answer)
	}

	// Usage counts words: each streamed token is one "output token".
	output, reasoning := len(steps), 0
	for _, s := range steps {
		if s.chunk.Reasoning != "" {
			reasoning++
		}
	}
	input := 0
	for _, msg := range req.Messages {
		input += len(strings.Fields(textOf(msg)))
	}
	steps = append(steps,
		step{chunk: llm.Chunk{FinishReason: finish}},
		step{chunk: llm.Chunk{Usage: &llm.Usage{InputTokens: input, OutputTokens: output, ReasoningTokens: reasoning}}},
	)
	return steps, nil
}

func (m *Model) plainAnswer(msg llm.Message, missing []string) string {
	text := strings.TrimSpace(textOf(msg))
	images := 0
	for _, p := range msg.Parts {
		if p.Type == "image_url" {
			images++
		}
	}
	var b strings.Builder
	b.WriteString("I'm agentchat's offline demo model, so I can't really think, but ")
	switch {
	case text == "" && images == 0:
		b.WriteString("I received an empty message.")
	case text == "":
		fmt.Fprintf(&b, "I received your message with %s.", plural(images, "image"))
	default:
		b.WriteString("I received your message")
		if images > 0 {
			fmt.Fprintf(&b, " with %s", plural(images, "image"))
		}
		fmt.Fprintf(&b, ": %q.", clip(oneLine(text), 200))
	}
	for _, name := range missing {
		fmt.Fprintf(&b, " I would use the %s tool for that, but it is not available here.", name)
	}
	b.WriteString(" " + m.hint)
	return b.String()
}

// call is a tool call the rules chose.
type call struct {
	name string
	args map[string]string
	at   int // where its phrase starts in the text, for ordering
}

func (c call) json() string {
	b, _ := marshal(c.args)
	return string(b)
}

// marshal is json.Marshal without HTML escaping, so arguments read as typed
// ("2<3", "a & b"), and without the encoder's trailing newline.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return bytes.TrimRight(buf.Bytes(), "\n"), err
}

var (
	// The rules match the original text case-insensitively ((?i)), never a
	// lowercased copy: lowercasing may change byte offsets, and the offsets
	// order the calls and cut out the expression.
	thinkRe   = regexp.MustCompile(`(?i)\bthink(ing)?\b|思考`)
	timeRe    = regexp.MustCompile(`(?i)\b(time|clock)\b|几点|时间`)
	ianaRe    = regexp.MustCompile(`\b(Africa|America|Antarctica|Asia|Atlantic|Australia|Europe|Indian|Pacific|Etc)/[A-Za-z_]+(/[A-Za-z_]+)?\b`)
	utcRe     = regexp.MustCompile(`\b(UTC|GMT)\b`)
	calcRe    = regexp.MustCompile(`(?i)\b(calculate|compute|what is|what's)\b|计算`)
	exprRe    = regexp.MustCompile(`[-(\d][\d\s.+\-*/^%()×÷]*[\d)]`)
	opRe      = regexp.MustCompile(`[\d)]\s*[-+*/^%×÷]\s*[-(\d.]`)
	fetchRe   = regexp.MustCompile(`(?i)\b(fetch|get)\b|获取`)
	urlRe     = regexp.MustCompile(`https?://[^\s"'<>()\[\]{}“”「」]+`)
	sendRe    = regexp.MustCompile(`(?i)\bsend\b|发`)
	feishuRe  = regexp.MustCompile(`(?i)\b(feishu|lark)\b|飞书`)
	webhookRe = regexp.MustCompile(`(?i)\bwebhook\b`)
	quoteRe   = regexp.MustCompile(`"([^"]+)"|“([^”]+)”|「([^」]+)」`)
	sayingRe  = regexp.MustCompile(`(?i)\bsaying\b\s*:?\s*(.+)`)
	colonRe   = regexp.MustCompile(`[:：]\s*(.+)`)
)

// cities maps city names to IANA zones, longest names first so that
// "new york" is tried before any shorter name inside it.
var cities = []struct{ name, zone string }{
	{"san francisco", "America/Los_Angeles"},
	{"los angeles", "America/Los_Angeles"},
	{"hong kong", "Asia/Hong_Kong"},
	{"singapore", "Asia/Singapore"},
	{"new york", "America/New_York"},
	{"shanghai", "Asia/Shanghai"},
	{"shenzhen", "Asia/Shanghai"},
	{"beijing", "Asia/Shanghai"},
	{"chicago", "America/Chicago"},
	{"toronto", "America/Toronto"},
	{"london", "Europe/London"},
	{"berlin", "Europe/Berlin"},
	{"moscow", "Europe/Moscow"},
	{"sydney", "Australia/Sydney"},
	{"mumbai", "Asia/Kolkata"},
	{"delhi", "Asia/Kolkata"},
	{"tokyo", "Asia/Tokyo"},
	{"seoul", "Asia/Seoul"},
	{"dubai", "Asia/Dubai"},
	{"paris", "Europe/Paris"},
	{"北京", "Asia/Shanghai"},
	{"上海", "Asia/Shanghai"},
	{"东京", "Asia/Tokyo"},
	{"伦敦", "Europe/London"},
	{"纽约", "America/New_York"},
}

// match applies the tool rules to text. It returns the calls to make, in
// the order their phrases appear, and the tools a rule wanted but the
// request does not offer.
func match(text string, offered map[string]bool) (calls []call, missing []string) {
	want := func(name string, at int, args map[string]string) {
		if !offered[name] {
			missing = append(missing, name)
			return
		}
		calls = append(calls, call{name: name, args: args, at: at})
	}
	if loc := timeRe.FindStringIndex(text); loc != nil {
		want(ToolCurrentTime, loc[0], map[string]string{"timezone": timezone(text)})
	}
	if loc := calcRe.FindStringIndex(text); loc != nil {
		if expr, ok := expression(text[loc[1]:]); ok {
			want(ToolCalculator, loc[0], map[string]string{"expression": expr})
		}
	}
	if loc := fetchRe.FindStringIndex(text); loc != nil {
		if u := urlRe.FindString(text); u != "" {
			want(ToolHTTPGet, loc[0], map[string]string{"url": strings.TrimRight(u, ".,;:!?。，")})
		}
	}
	if sendRe.MatchString(text) {
		if loc := feishuRe.FindStringIndex(text); loc != nil {
			want(ToolFeishu, loc[0], map[string]string{"text": messageText(text)})
		}
		if loc := webhookRe.FindStringIndex(text); loc != nil {
			want(ToolWebhook, loc[0], map[string]string{"text": messageText(text)})
		}
	}
	if loc := chartRe.FindStringIndex(text); loc != nil {
		if clause, nums := chartValues(text, loc[0], calls); len(nums) > 0 {
			want(ToolChart, loc[0], map[string]string{"title": chartTitle(clause, text), "values": strings.Join(nums, ",")})
		}
	}
	slices.SortStableFunc(calls, func(a, b call) int { return a.at - b.at })
	return calls, missing
}

// phraseTools are the tools the phrase rules call: naming them is not enough.
var phraseTools = map[string]bool{ToolCurrentTime: true, ToolCalculator: true, ToolHTTPGet: true, ToolFeishu: true, ToolWebhook: true, ToolChart: true}

// namedTools returns the rule for tools called by name: every offered tool
// the phrase rules do not call, found in the text as a whole word.
func namedTools(tools []llm.ToolSpec) func(text string) []call {
	type named struct {
		re    *regexp.Regexp
		name  string
		param string // the string parameter the quoted text fills
	}
	var rules []named
	for _, t := range tools {
		if phraseTools[t.Name] || t.Name == "" {
			continue
		}
		rules = append(rules, named{re: regexp.MustCompile(`(^|[^\w-])` + regexp.QuoteMeta(t.Name) + `($|[^\w-])`), name: t.Name, param: stringParam(t.Parameters)})
	}
	return func(text string) []call {
		var calls []call
		for _, r := range rules {
			loc := r.re.FindStringIndex(text)
			if loc == nil {
				continue
			}
			args := map[string]string{}
			if m := quoteRe.FindStringSubmatch(text); m != nil && r.param != "" {
				args[r.param] = cmp.Or(m[1], m[2], m[3])
			}
			calls = append(calls, call{name: r.name, args: args, at: loc[0]})
		}
		return calls
	}
}

// stringParam is the first string property of a JSON schema, the required
// ones first, in the order the schema lists them; "" when it has none.
func stringParam(schema json.RawMessage) string {
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return ""
	}
	// The properties in their written order.
	var order []string
	dec := json.NewDecoder(bytes.NewReader(s.Properties))
	types := map[string]string{}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return ""
		}
		var p struct {
			Type any `json:"type"`
		}
		if dec.Decode(&p) != nil {
			return ""
		}
		name, _ := k.(string)
		typ, _ := p.Type.(string)
		order = append(order, name)
		types[name] = typ
	}
	for _, name := range append(slices.Clone(s.Required), order...) {
		if types[name] == "string" {
			return name
		}
	}
	return ""
}

// timezone is the IANA zone text names, directly or by a city, else UTC.
func timezone(text string) string {
	if z := ianaRe.FindString(text); z != "" {
		return z
	}
	if utcRe.MatchString(text) {
		return "UTC"
	}
	lower := strings.ToLower(text)
	best, zone := -1, "UTC"
	for _, c := range cities {
		if i := strings.Index(lower, c.name); i >= 0 && (best < 0 || i < best) {
			best, zone = i, c.zone
		}
	}
	return zone
}

// expression finds the first arithmetic expression (one with an operator) in s.
func expression(s string) (string, bool) {
	for _, e := range exprRe.FindAllString(s, -1) {
		e = strings.TrimSpace(e)
		if opRe.MatchString(e) {
			return strings.NewReplacer("×", "*", "÷", "/").Replace(e), true
		}
	}
	return "", false
}

// messageText is the text a send rule sends: the first quoted text, else
// what follows "saying" or a colon, else the whole message.
func messageText(text string) string {
	if m := quoteRe.FindStringSubmatch(text); m != nil {
		return cmp.Or(m[1], m[2], m[3])
	}
	if m := sayingRe.FindStringSubmatch(text); m != nil {
		return strings.TrimSpace(m[1])
	}
	if m := colonRe.FindStringSubmatch(text); m != nil && !strings.HasPrefix(m[1], "//") {
		return strings.TrimSpace(m[1])
	}
	return strings.TrimSpace(text)
}

// summarise answers the tool results that end msgs, one sentence each.
func summarise(msgs []llm.Message) string {
	start := len(msgs)
	for start > 0 && msgs[start-1].Role == llm.RoleTool {
		start--
	}
	calls := map[string]llm.ToolCall{}
	for _, m := range msgs[:start] {
		for _, c := range m.ToolCalls {
			calls[c.ID] = c
		}
	}
	var out []string
	for _, m := range msgs[start:] {
		c := calls[m.ToolCallID]
		name := cmp.Or(m.Name, c.Name, "unnamed")
		var args map[string]string
		json.Unmarshal(c.Arguments, &args)
		out = append(out, summariseOne(name, args, m.Content))
	}
	return strings.Join(out, " ")
}

var declinedRe = regexp.MustCompile(`(?i)\b(declined|rejected|denied|not approved|refused)\b|拒绝`)

func summariseOne(name string, args map[string]string, content string) string {
	content = strings.TrimSpace(content)
	var obj map[string]any
	json.Unmarshal([]byte(content), &obj)
	field := func(keys ...string) string {
		for _, k := range keys {
			if v, ok := obj[k]; ok && v != nil {
				if s, ok := v.(string); ok {
					return s
				}
				b, _ := marshal(v)
				return string(b)
			}
		}
		return ""
	}
	sending := name == ToolFeishu || name == ToolWebhook
	// A failure first: its text may say "refused" without anyone declining.
	if e := field("error"); e != "" || strings.HasPrefix(strings.ToLower(content), "error") {
		return fmt.Sprintf("The %s tool failed: %s.", name, clip(oneLine(cmp.Or(e, content)), 200))
	}
	if declinedRe.MatchString(content) {
		if sending {
			return "Okay, I did not send it."
		}
		return "Okay, I did not run it."
	}
	switch name {
	case ToolCurrentTime:
		t := cmp.Or(field("time", "datetime", "current_time", "now", "formatted", "iso"), content)
		if zone := cmp.Or(args["timezone"], field("timezone", "zone")); zone != "" {
			return fmt.Sprintf("The current time in %s is %s.", zone, clip(oneLine(t), 100))
		}
		return fmt.Sprintf("The current time is %s.", clip(oneLine(t), 100))
	case ToolCalculator:
		return fmt.Sprintf("The result is %s.", clip(oneLine(cmp.Or(field("result", "value", "answer"), content)), 100))
	case ToolFeishu:
		return "Done: the Feishu message was sent."
	case ToolWebhook:
		return "Done: the webhook was sent."
	case ToolHTTPGet:
		return fmt.Sprintf("I fetched %s: %s", cmp.Or(args["url"], "the page"), clip(oneLine(content), 160))
	}
	return fmt.Sprintf("The %s tool returned: %s", name, clip(oneLine(content), 160))
}

// requestHash is a short digest of the conversation: tool-call IDs derived
// from it are the same for the same request and differ from turn to turn.
func requestHash(req llm.Request) string {
	h := sha256.New()
	for _, m := range req.Messages {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", m.Role, textOf(m), m.ToolCallID)
		for _, c := range m.ToolCalls {
			fmt.Fprintf(h, "%s\x00%s\x00%s\x00", c.ID, c.Name, c.Arguments)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:4])
}

// fragments splits JSON arguments into two or more pieces at rune
// boundaries, as providers stream them: consumers must assemble them.
func fragments(s string) []string {
	runes := []rune(s)
	n := max(2, len(runes)/12)
	size := (len(runes) + n - 1) / n
	var out []string
	for i := 0; i < len(runes); i += size {
		out = append(out, string(runes[i:min(i+size, len(runes))]))
	}
	return out
}

func lastOf(msgs []llm.Message, role llm.Role) llm.Message {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == role {
			return msgs[i]
		}
	}
	return llm.Message{}
}

// textOf is a message's text: Content, or its text parts.
func textOf(m llm.Message) string {
	if len(m.Parts) == 0 {
		return m.Content
	}
	var parts []string
	for _, p := range m.Parts {
		if p.Type == "text" {
			parts = append(parts, p.Text)
		}
	}
	return strings.Join(parts, " ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// stream plays a script.
type stream struct {
	ctx   context.Context
	steps []step
	delay time.Duration
	timer *time.Timer
	cur   llm.Chunk
	err   error
	done  bool
}

func (s *stream) Next() bool {
	if s.done || s.err != nil || len(s.steps) == 0 {
		return false
	}
	st := s.steps[0]
	if st.paced && s.delay > 0 {
		// A timer and ctx in one select, never time.Sleep: cancelling the
		// run must stop the stream within the current token, not after it.
		if s.timer == nil {
			s.timer = time.NewTimer(s.delay)
		} else {
			s.timer.Reset(s.delay)
		}
		select {
		case <-s.ctx.Done():
			s.timer.Stop()
			s.err = ctxError(s.ctx)
			return false
		case <-s.timer.C:
		}
	} else if err := ctxError(s.ctx); err != nil {
		s.err = err
		return false
	}
	s.cur, s.steps = st.chunk, s.steps[1:]
	return true
}

func (s *stream) Chunk() llm.Chunk { return s.cur }

func (s *stream) Err() error { return s.err }

func (s *stream) Close() error {
	s.done = true
	if s.timer != nil {
		s.timer.Stop()
	}
	return nil
}

// ctxError reports an ended ctx as the HTTP adapters do: a deadline is a
// timeout *llm.Error, a cancellation the context's own error.
func ctxError(ctx context.Context) error {
	switch err := ctx.Err(); {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return &llm.Error{Code: llm.CodeTimeout, Message: "the offline demo model ran out of time", Err: err}
	default:
		return err
	}
}
