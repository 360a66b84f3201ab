package anthropic

import "github.com/agentchat/agentchat/internal/llm/internal/jsonscan"

// event is one Messages stream event, narrowed to the fields the adapter
// uses. An eventDecoder fills it in place, so decoding an event allocates
// only the strings it keeps.
type event struct {
	typ   string // the JSON "type", which the SDK goes by, not the SSE event name
	index int64
	// messageUsage is message_start's message.usage; usage is message_delta's.
	messageUsage, usage usage
	block               block
	delta               delta // content_block_delta's and message_delta's
}

type usage struct {
	inputTokens, cacheCreationInputTokens, cacheReadInputTokens int64
	outputTokens, thinkingTokens                                int64
}

// input is every input token: the uncached ones and the cache's.
func (u usage) input() int64 {
	return u.inputTokens + u.cacheCreationInputTokens + u.cacheReadInputTokens
}

type block struct {
	typ, id, name, text, thinking string
}

type delta struct {
	typ, text, thinking, partialJSON, stopReason string
}

// The values the API defines: reading them costs no allocation.
var (
	eventTypes = []string{"content_block_delta", "content_block_start", "content_block_stop",
		"message_start", "message_delta", "message_stop"}
	blockTypes  = []string{"text", "thinking", "tool_use", "redacted_thinking", "server_tool_use"}
	deltaTypes  = []string{"text_delta", "input_json_delta", "thinking_delta", "signature_delta", "citations_delta"}
	stopReasons = []string{"end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal",
		"model_context_window_exceeded"}
)

// eventDecoder decodes event JSON without reflection, with the rules of
// the openai adapter's chunk decoder: unknown members skipped and
// validated, members in any order, the last of repeated keys decides, a
// value of another type than the API's or null is taken as absent. The top
// level must be an object.
type eventDecoder struct{ s jsonscan.Scanner }

// decode parses data into ev, which it resets first.
func (d *eventDecoder) decode(data []byte, ev *event) error {
	d.s.Reset(data)
	*ev = event{}
	var err error
	if d.s.Peek() != '{' {
		err = d.s.Fail("an event must be a JSON object")
	} else {
		err = d.s.Object(func(key []byte) error {
			switch string(key) {
			case "type":
				return d.s.Enum(&ev.typ, eventTypes)
			case "index":
				return d.s.Int(&ev.index)
			case "message":
				ev.messageUsage = usage{}
				if d.s.Peek() == '{' {
					return d.s.Object(func(key []byte) error {
						if string(key) == "usage" {
							return d.usage(&ev.messageUsage)
						}
						return d.s.Skip()
					})
				}
			case "usage":
				return d.usage(&ev.usage)
			case "content_block":
				ev.block = block{}
				if d.s.Peek() == '{' {
					return d.block(&ev.block)
				}
			case "delta":
				ev.delta = delta{}
				if d.s.Peek() == '{' {
					return d.delta(&ev.delta)
				}
			}
			return d.s.Skip()
		})
	}
	if ferr := d.s.Finish(); err == nil {
		err = ferr
	}
	return err
}

func (d *eventDecoder) usage(u *usage) error {
	*u = usage{}
	if d.s.Peek() != '{' {
		return d.s.Skip()
	}
	return d.s.Object(func(key []byte) error {
		switch string(key) {
		case "input_tokens":
			return d.s.Int(&u.inputTokens)
		case "cache_creation_input_tokens":
			return d.s.Int(&u.cacheCreationInputTokens)
		case "cache_read_input_tokens":
			return d.s.Int(&u.cacheReadInputTokens)
		case "output_tokens":
			return d.s.Int(&u.outputTokens)
		case "output_tokens_details":
			u.thinkingTokens = 0
			if d.s.Peek() == '{' {
				return d.s.Object(func(key []byte) error {
					if string(key) == "thinking_tokens" {
						return d.s.Int(&u.thinkingTokens)
					}
					return d.s.Skip()
				})
			}
		}
		return d.s.Skip()
	})
}

func (d *eventDecoder) block(b *block) error {
	return d.s.Object(func(key []byte) error {
		switch string(key) {
		case "type":
			return d.s.Enum(&b.typ, blockTypes)
		case "id":
			return d.s.String(&b.id)
		case "name":
			return d.s.String(&b.name)
		case "text":
			return d.s.String(&b.text)
		case "thinking":
			return d.s.String(&b.thinking)
		}
		return d.s.Skip()
	})
}

func (d *eventDecoder) delta(dl *delta) error {
	return d.s.Object(func(key []byte) error {
		switch string(key) {
		case "type":
			return d.s.Enum(&dl.typ, deltaTypes)
		case "text":
			return d.s.String(&dl.text)
		case "thinking":
			return d.s.String(&dl.thinking)
		case "partial_json":
			return d.s.String(&dl.partialJSON)
		case "stop_reason":
			return d.s.Enum(&dl.stopReason, stopReasons)
		}
		return d.s.Skip()
	})
}
