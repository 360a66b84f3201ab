package llm

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// Accumulator folds the chunks of one completion into the assistant's
// answer: its text, its reasoning, its complete tool calls, usage and finish
// reason. The agent loop forwards each chunk as it streams and keeps an
// Accumulator beside it, so the message it stores is exactly what was streamed.
//
// The zero value is ready to use. An Accumulator is used by one goroutine.
type Accumulator struct {
	text      strings.Builder
	reasoning strings.Builder
	calls     []*ToolCall // by ToolCallDelta.Index; nil where no delta arrived
	args      []strings.Builder
	usage     *Usage
	finish    string
}

// Add folds one chunk in.
func (a *Accumulator) Add(c Chunk) {
	a.text.WriteString(c.Text)
	a.reasoning.WriteString(c.Reasoning)
	if d := c.ToolCall; d != nil && d.Index >= 0 {
		for len(a.calls) <= d.Index {
			a.calls = append(a.calls, nil)
			a.args = append(a.args, strings.Builder{})
		}
		call := a.calls[d.Index]
		if call == nil {
			call = &ToolCall{}
			a.calls[d.Index] = call
		}
		// Providers repeat ID and Name on later fragments, or send them late:
		// the first non-empty value wins.
		call.ID = cmp.Or(call.ID, d.ID)
		call.Name = cmp.Or(call.Name, d.Name)
		a.args[d.Index].WriteString(d.ArgsDelta)
	}
	if c.Usage != nil {
		u := *c.Usage
		a.usage = &u
	}
	if c.FinishReason != "" {
		a.finish = c.FinishReason
	}
}

// Text is the answer's text so far.
func (a *Accumulator) Text() string { return a.text.String() }

// Reasoning is the model's reasoning text so far.
func (a *Accumulator) Reasoning() string { return a.reasoning.String() }

// ToolCalls are the calls assembled so far, in Index order. A call whose
// provider sent no ID gets "call_<index>" so that its result can name it;
// a call with no argument fragments gets "{}", the empty arguments object,
// since tools and providers want an object, never an empty string.
func (a *Accumulator) ToolCalls() []ToolCall {
	var out []ToolCall
	for i, c := range a.calls {
		if c == nil {
			continue
		}
		args := strings.TrimSpace(a.args[i].String())
		if args == "" {
			args = "{}"
		}
		out = append(out, ToolCall{
			ID:        cmp.Or(c.ID, "call_"+strconv.Itoa(i)),
			Name:      c.Name,
			Arguments: json.RawMessage(args),
		})
	}
	return out
}

// Usage is the last usage reported, nil if none was.
func (a *Accumulator) Usage() *Usage {
	if a.usage == nil {
		return nil
	}
	u := *a.usage
	return &u
}

// FinishReason is the last finish reason reported, "" if none was.
func (a *Accumulator) FinishReason() string { return a.finish }

// Message is the assistant message to append to the conversation.
func (a *Accumulator) Message() Message {
	return Message{Role: RoleAssistant, Content: a.Text(), ToolCalls: slices.Clip(a.ToolCalls())}
}

// Collect reads s to its end, folding every chunk, and closes it. It returns
// what was accumulated even when the stream failed, with the stream's error.
func Collect(s Stream) (*Accumulator, error) {
	defer s.Close()
	var a Accumulator
	for s.Next() {
		a.Add(s.Chunk())
	}
	return &a, s.Err()
}
