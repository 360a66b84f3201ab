package local

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/prompt"
)

// Structured answers (engine.Options.Structured, seed 004's worker output).
//
// The model is asked, in the system prompt and through the provider's JSON
// mode (llm.Request.JSONObject), for one JSON object:
//
//	{"answer": "…", "key_points": ["…"], "result_type": "execution_report",
//	 "suggested_actions": ["…"], "status": "success", "ui_hints": {…}}
//
// While it streams, only the decoded text of the top-level "answer" string
// becomes text deltas, so a chat UI shows prose, never JSON. When the model
// answers with plain text anyway (a provider without JSON mode, a model that
// ignores it), the text passes through unchanged and the structure is derived
// from it (DeriveAnswer). Either way the stored message's content is the
// answer text, and the parsed or derived Answer travels with it.

// structuredPrompt is added to the system prompt of structured runs.
const structuredPrompt = `Reply with a single JSON object and nothing else, with these fields:
"answer": your complete reply to the user, as Markdown text;
"key_points": an array of short strings, the main facts of the answer;
"result_type": "execution_report" when you did or found something, "clarification" when you need more from the user, "error_report" when something failed, else "unknown";
"suggested_actions": an array of short follow-ups the user might ask for next;
"status": "success", "partial_success" or "failed";
"ui_hints" (optional): {"blocks":[…]} where each block has a "kind" of text, key_points, list (items), table (columns, rows), chart (chart_type bar|line|area|pie, labels, series [{name, data}]) or actions (actions).
To use a tool, call it instead of answering; answer in this JSON form once you have what you need.`

// answerText turns the streamed text of a structured answer into the text a
// person should see: the decoded "answer" string of a JSON object, or the
// text itself when it is not a JSON object. Feed returns what each chunk
// adds; the result does not depend on how the text was chunked.
type answerText struct {
	st       scanState
	key      []byte
	esc      bool // after a backslash (keys, skipped strings, the answer)
	hex      []byte
	high     rune // a pending UTF-16 high surrogate
	answered bool
	// skipping a value other than the answer
	inStr, scalar bool
	nest          int
}

type scanState int

const (
	scanLead   scanState = iota // before the first non-space byte
	scanPass                    // not a JSON object: everything is shown
	scanKey                     // in the top-level object, before a key
	scanKeyStr                  // reading a key
	scanColon                   // after a key
	scanValue                   // before a value
	scanAnswer                  // inside the answer string
	scanSkip                    // inside another value
	scanEnd                     // after the object
)

// Feed consumes a chunk of the model's text and returns the visible text it adds.
func (a *answerText) Feed(chunk string) string {
	var out strings.Builder
	for i := 0; i < len(chunk); i++ {
		b := chunk[i]
		switch a.st {
		case scanLead:
			if isSpace(b) {
				continue
			}
			if b == '{' {
				a.st = scanKey
				continue
			}
			a.st = scanPass
			out.WriteString(chunk[i:])
			return out.String()
		case scanPass:
			out.WriteString(chunk[i:])
			return out.String()
		case scanKey:
			switch b {
			case '"':
				a.st, a.key = scanKeyStr, a.key[:0]
			case '}':
				a.st = scanEnd
			}
		case scanKeyStr:
			switch {
			case a.esc:
				a.esc = false
				a.key = append(a.key, b)
			case b == '\\':
				a.esc = true
			case b == '"':
				a.st = scanColon
			default:
				a.key = append(a.key, b)
			}
		case scanColon:
			if b == ':' {
				a.st = scanValue
			}
		case scanValue:
			if isSpace(b) {
				continue
			}
			if b == '"' && string(a.key) == "answer" && !a.answered {
				a.st, a.answered = scanAnswer, true
				continue
			}
			a.st, a.inStr, a.scalar, a.nest = scanSkip, b == '"', false, 0
			switch b {
			case '{', '[':
				a.nest = 1
			case '"':
			default:
				a.scalar = true
			}
		case scanSkip:
			a.skip(b)
		case scanAnswer:
			a.answerByte(&out, b)
		case scanEnd:
			return out.String()
		}
	}
	return out.String()
}

func (a *answerText) skip(b byte) {
	switch {
	case a.inStr:
		switch {
		case a.esc:
			a.esc = false
		case b == '\\':
			a.esc = true
		case b == '"':
			a.inStr = false
			if a.nest == 0 {
				a.st = scanKey
			}
		}
	case a.scalar:
		switch b {
		case ',':
			a.st = scanKey
		case '}':
			a.st = scanEnd
		}
	default:
		switch b {
		case '"':
			a.inStr = true
		case '{', '[':
			a.nest++
		case '}', ']':
			if a.nest--; a.nest == 0 {
				a.st = scanKey
			}
		}
	}
}

func (a *answerText) answerByte(out *strings.Builder, b byte) {
	if a.hex != nil {
		a.hex = append(a.hex, b)
		if len(a.hex) < 4 {
			return
		}
		n, err := strconv.ParseUint(string(a.hex), 16, 16)
		a.hex = nil
		if err != nil {
			out.WriteRune(utf8.RuneError)
			return
		}
		a.writeUnit(out, rune(n))
		return
	}
	if a.esc {
		a.esc = false
		switch b {
		case 'u':
			a.hex = make([]byte, 0, 4)
			return
		case 'n':
			b = '\n'
		case 't':
			b = '\t'
		case 'r':
			b = '\r'
		case 'b':
			b = '\b'
		case 'f':
			b = '\f'
		}
		a.flushHigh(out)
		out.WriteByte(b)
		return
	}
	switch b {
	case '\\':
		a.esc = true
	case '"':
		a.flushHigh(out)
		a.st = scanKey
	default:
		a.flushHigh(out)
		out.WriteByte(b)
	}
}

// writeUnit writes one \u escape, pairing surrogates.
func (a *answerText) writeUnit(out *strings.Builder, r rune) {
	switch {
	case utf16.IsSurrogate(r) && r < 0xDC00:
		a.flushHigh(out)
		a.high = r
	case utf16.IsSurrogate(r):
		if a.high != 0 {
			out.WriteRune(utf16.DecodeRune(a.high, r))
			a.high = 0
		} else {
			out.WriteRune(utf8.RuneError)
		}
	default:
		a.flushHigh(out)
		out.WriteRune(r)
	}
}

func (a *answerText) flushHigh(out *strings.Builder) {
	if a.high != 0 {
		out.WriteRune(utf8.RuneError)
		a.high = 0
	}
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\r' || b == '\t' }

// visibleText is what a structured answer's text shows once streamed.
func visibleText(raw string) string {
	var a answerText
	return a.Feed(raw)
}

// ParseAnswer reads a structured answer. Fields that are missing or of the
// wrong shape get the values DeriveAnswer would give the answer text; text
// that is not a JSON object is derived from as a whole.
func ParseAnswer(raw string) *event.Answer {
	var obj struct {
		Answer           json.RawMessage `json:"answer"`
		KeyPoints        json.RawMessage `json:"key_points"`
		ResultType       any             `json:"result_type"`
		SuggestedActions json.RawMessage `json:"suggested_actions"`
		Status           any             `json:"status"`
		UIHints          json.RawMessage `json:"ui_hints"`
	}
	trimmed := strings.TrimSpace(raw)
	if !strings.HasPrefix(trimmed, "{") || json.Unmarshal([]byte(trimmed), &obj) != nil {
		return DeriveAnswer(visibleText(raw))
	}
	text := visibleText(raw)
	if text == "" {
		text = raw // no answer field: show what the model wrote rather than nothing
	}
	a := DeriveAnswer(text)
	if kp := stringList(obj.KeyPoints); kp != nil {
		a.KeyPoints = kp
	}
	if sa := stringList(obj.SuggestedActions); sa != nil {
		a.SuggestedActions = sa
	}
	if rt, _ := obj.ResultType.(string); slices.Contains([]string{"execution_report", "clarification", "error_report", "unknown"}, rt) {
		a.ResultType = rt
	}
	if st, _ := obj.Status.(string); slices.Contains([]string{"success", "partial_success", "failed"}, st) {
		a.Status = st
	}
	if h := bytes.TrimSpace(obj.UIHints); len(h) > 0 && string(h) != "null" {
		a.UIHints = h
	}
	return a
}

// stringList reads an array of strings (or of objects with a "label" or
// "text"), nil when raw is no array.
func stringList(raw json.RawMessage) []string {
	var items []any
	if json.Unmarshal(raw, &items) != nil || items == nil {
		return nil
	}
	out := []string{}
	for _, it := range items {
		switch v := it.(type) {
		case string:
			if s := strings.TrimSpace(v); s != "" {
				out = append(out, s)
			}
		case map[string]any:
			for _, k := range []string{"label", "text", "title"} {
				if s, ok := v[k].(string); ok && strings.TrimSpace(s) != "" {
					out = append(out, strings.TrimSpace(s))
					break
				}
			}
		}
	}
	return out
}

// systemPrompt is the configured system prompt, then the context the client
// gave, then the answer format when the run asks for a structured answer.
func (r *runner) systemPrompt() string {
	var parts []string
	instructions := ""
	if r.t.Agent != nil {
		instructions = r.t.Agent.Instructions
	}
	system := prompt.WithInstructions(r.a.system, instructions)
	if r.a.prompt != nil {
		system = r.a.prompt.SystemPrompt(r.t.Scope.Tenant, instructions)
	}
	if system != "" {
		parts = append(parts, system)
	}
	if len(r.t.Options.Context) > 0 {
		var b strings.Builder
		b.WriteString("Context from the application:")
		for _, c := range r.t.Options.Context {
			fmt.Fprintf(&b, "\n- %s: %s", c.Description, c.Value)
		}
		parts = append(parts, b.String())
	}
	if s := r.statePrompt(); s != "" { // state.go
		parts = append(parts, s)
	}
	if r.t.Options.Structured {
		parts = append(parts, structuredPrompt)
	}
	return strings.Join(parts, "\n\n")
}

// shownText is what a whole streamed text showed: itself, or for a
// structured answer its answer text.
func (r *runner) shownText(raw string) string {
	if !r.t.Options.Structured {
		return raw
	}
	return visibleText(raw)
}

// visible passes a text chunk through unchanged, or for a structured answer
// through its answer-text scanner.
func (r *runner) visible(a *answerText, chunk string) string {
	if !r.t.Options.Structured {
		return chunk
	}
	return a.Feed(chunk)
}
