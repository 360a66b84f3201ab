package openai

import "github.com/agentchat/agentchat/internal/llm/internal/jsonscan"

// chunk is one chat.completion.chunk, narrowed to the fields the adapter
// uses. A chunkDecoder fills it in place, reusing its slices, so decoding a
// chunk allocates only the strings it keeps.
type chunk struct {
	// isError: the event has a top-level "error" member (even null), which
	// makes it an in-stream error event, as the SDK has it.
	isError  bool
	hasUsage bool // "usage" is an object (absent and null are not usage)
	usage    usage
	choices  []choice
}

type usage struct {
	promptTokens, completionTokens, reasoningTokens, cachedTokens int64
}

type choice struct {
	index        int64
	finishReason string
	delta        delta
}

type delta struct {
	content, refusal string
	// reasoningContent and reasoning are the fields thinking models add
	// (DeepSeek, Qwen, vLLM: reasoning_content; some newer servers:
	// reasoning), when they are strings.
	reasoningContent, reasoning string
	toolCalls                   []toolCall
}

type toolCall struct {
	index          int64
	id, name, args string
}

// chunkDecoder decodes chunk JSON without reflection: one pass over the
// bytes, unknown members skipped (validated, never decoded), members in any
// order, whitespace anywhere. It accepts exactly the JSON encoding/json
// accepts and unquotes strings as it does (see jsonscan).
//
// A member sets its field afresh: where the same key comes twice in an
// object, the last one decides, as for a map. A value of another type than
// the API's (a number for content, a string for an index) is taken as
// absent, and so is null; array elements that are not objects are skipped.
// The top level may be null (an empty chunk); any other non-object is an
// error.
type chunkDecoder struct{ s jsonscan.Scanner }

func (d *chunkDecoder) top(c *chunk) error {
	if isNull, err := d.s.Null(); isNull || err != nil {
		return err
	}
	if d.s.Peek() != '{' {
		return d.s.Fail("a chunk must be a JSON object")
	}
	return d.s.Object(func(key []byte) error {
		switch string(key) {
		case "choices":
			c.choices = c.choices[:0]
			if d.s.Peek() != '[' {
				return d.s.Skip()
			}
			return d.s.Array(func() error {
				if d.s.Peek() != '{' {
					return d.s.Skip()
				}
				return d.choice(c.nextChoice())
			})
		case "usage":
			c.usage = usage{}
			c.hasUsage = d.s.Peek() == '{'
			if c.hasUsage {
				return d.usage(&c.usage)
			}
		case "error":
			c.isError = true
		}
		return d.s.Skip()
	})
}

// nextChoice appends a zero choice, reusing the slot's tool-call slice.
func (c *chunk) nextChoice() *choice {
	if len(c.choices) < cap(c.choices) {
		c.choices = c.choices[:len(c.choices)+1]
		ch := &c.choices[len(c.choices)-1]
		*ch = choice{delta: delta{toolCalls: ch.delta.toolCalls[:0]}}
		return ch
	}
	c.choices = append(c.choices, choice{})
	return &c.choices[len(c.choices)-1]
}

func (d *chunkDecoder) choice(ch *choice) error {
	return d.s.Object(func(key []byte) error {
		switch string(key) {
		case "index":
			return d.s.Int(&ch.index)
		case "finish_reason":
			return d.s.Enum(&ch.finishReason, finishReasons)
		case "delta":
			ch.delta = delta{toolCalls: ch.delta.toolCalls[:0]}
			if d.s.Peek() == '{' {
				return d.delta(&ch.delta)
			}
		}
		return d.s.Skip()
	})
}

func (d *chunkDecoder) delta(dl *delta) error {
	return d.s.Object(func(key []byte) error {
		switch string(key) {
		case "content":
			return d.s.String(&dl.content)
		case "refusal":
			return d.s.String(&dl.refusal)
		case "reasoning_content":
			return d.s.String(&dl.reasoningContent)
		case "reasoning":
			return d.s.String(&dl.reasoning)
		case "tool_calls":
			dl.toolCalls = dl.toolCalls[:0]
			if d.s.Peek() != '[' {
				return d.s.Skip()
			}
			return d.s.Array(func() error {
				if d.s.Peek() != '{' {
					return d.s.Skip()
				}
				dl.toolCalls = append(dl.toolCalls, toolCall{})
				return d.toolCall(&dl.toolCalls[len(dl.toolCalls)-1])
			})
		}
		return d.s.Skip()
	})
}

func (d *chunkDecoder) toolCall(tc *toolCall) error {
	return d.s.Object(func(key []byte) error {
		switch string(key) {
		case "index":
			return d.s.Int(&tc.index)
		case "id":
			return d.s.String(&tc.id)
		case "function":
			tc.name, tc.args = "", ""
			if d.s.Peek() == '{' {
				return d.s.Object(func(key []byte) error {
					switch string(key) {
					case "name":
						return d.s.String(&tc.name)
					case "arguments":
						return d.s.String(&tc.args)
					}
					return d.s.Skip()
				})
			}
		}
		return d.s.Skip()
	})
}

func (d *chunkDecoder) usage(u *usage) error {
	return d.s.Object(func(key []byte) error {
		switch string(key) {
		case "prompt_tokens":
			return d.s.Int(&u.promptTokens)
		case "completion_tokens":
			return d.s.Int(&u.completionTokens)
		case "prompt_tokens_details":
			u.cachedTokens = 0
			if d.s.Peek() == '{' {
				return d.s.Object(func(key []byte) error {
					if string(key) == "cached_tokens" {
						return d.s.Int(&u.cachedTokens)
					}
					return d.s.Skip()
				})
			}
		case "completion_tokens_details":
			u.reasoningTokens = 0
			if d.s.Peek() == '{' {
				return d.s.Object(func(key []byte) error {
					if string(key) == "reasoning_tokens" {
						return d.s.Int(&u.reasoningTokens)
					}
					return d.s.Skip()
				})
			}
		}
		return d.s.Skip()
	})
}

// finishReasons are the values the API defines: reading them costs no allocation.
var finishReasons = []string{"stop", "length", "tool_calls", "content_filter", "function_call"}

// decode parses data into c, which it resets first.
func (d *chunkDecoder) decode(data []byte, c *chunk) error {
	d.s.Reset(data)
	c.isError, c.hasUsage, c.usage = false, false, usage{}
	c.choices = c.choices[:0]
	err := d.top(c)
	if ferr := d.s.Finish(); err == nil {
		err = ferr
	}
	return err
}
