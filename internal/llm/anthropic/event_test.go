package anthropic

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/agentchat/agentchat/internal/llm/internal/jsonscan"
)

// decoded is what the adapter takes from an event, in a comparable form.
type decoded struct {
	Type         string
	Index        int64
	MessageUsage [5]int64 // input, cache creation, cache read, output, thinking
	Usage        [5]int64
	Block        [5]string // type, id, name, text, thinking
	Delta        [5]string // type, text, thinking, partial_json, stop_reason
}

func usageArray(u usage) [5]int64 {
	return [5]int64{u.inputTokens, u.cacheCreationInputTokens, u.cacheReadInputTokens, u.outputTokens, u.thinkingTokens}
}

func narrow(data []byte) (decoded, error) {
	var d eventDecoder
	var ev event
	if err := d.decode(data, &ev); err != nil {
		return decoded{}, err
	}
	return decoded{
		Type: ev.typ, Index: ev.index,
		MessageUsage: usageArray(ev.messageUsage), Usage: usageArray(ev.usage),
		Block: [5]string{ev.block.typ, ev.block.id, ev.block.name, ev.block.text, ev.block.thinking},
		Delta: [5]string{ev.delta.typ, ev.delta.text, ev.delta.thinking, ev.delta.partialJSON, ev.delta.stopReason},
	}, nil
}

// reference decodes data with encoding/json into a generic tree and reads
// the fields with the decoder's documented rules. ok is false when data is
// not a JSON object.
func reference(data []byte) (out decoded, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return out, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return out, false
	}
	top, isObj := v.(map[string]any)
	if !isObj {
		return out, false
	}
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	num := func(m map[string]any, k string) int64 {
		n, _ := m[k].(json.Number)
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return i
		}
		if strings.ContainsAny(string(n), ".eE") {
			if f, err := strconv.ParseFloat(string(n), 64); err == nil && f > -1<<63 && f < 1<<63 {
				return int64(f)
			}
		}
		return 0
	}
	obj := func(m map[string]any, k string) map[string]any { o, _ := m[k].(map[string]any); return o }
	use := func(u map[string]any) [5]int64 {
		return [5]int64{num(u, "input_tokens"), num(u, "cache_creation_input_tokens"), num(u, "cache_read_input_tokens"),
			num(u, "output_tokens"), num(obj(u, "output_tokens_details"), "thinking_tokens")}
	}
	b, d := obj(top, "content_block"), obj(top, "delta")
	return decoded{
		Type: str(top, "type"), Index: num(top, "index"),
		MessageUsage: use(obj(obj(top, "message"), "usage")), Usage: use(obj(top, "usage")),
		Block: [5]string{str(b, "type"), str(b, "id"), str(b, "name"), str(b, "text"), str(b, "thinking")},
		Delta: [5]string{str(d, "type"), str(d, "text"), str(d, "thinking"), str(d, "partial_json"), str(d, "stop_reason")},
	}, true
}

func sample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

var samples = []string{"event-text.json", "event-tool.json", "event-usage.json", "event-start.json", "event-block.json"}

func TestDecodeEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want decoded
	}{
		{string(sample(t, "event-text.json")), decoded{Type: "content_block_delta", Delta: [5]string{"text_delta", " world"}}},
		{string(sample(t, "event-tool.json")), decoded{Type: "content_block_delta", Index: 1,
			Delta: [5]string{"input_json_delta", "", "", `{"location": "San Fra`}}},
		{string(sample(t, "event-usage.json")), decoded{Type: "message_delta", Usage: [5]int64{472, 0, 0, 89, 12},
			Delta: [5]string{4: "end_turn"}}},
		{string(sample(t, "event-start.json")), decoded{Type: "message_start", MessageUsage: [5]int64{472, 0, 0, 2, 0}}},
		{string(sample(t, "event-block.json")), decoded{Type: "content_block_start", Index: 1,
			Block: [5]string{"tool_use", "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather"}}},
		{`{"delta":{"text":"\u00e9\ud83d\ude00\n","type":"text_delta"},"index":2,"type":"content_block_delta"}`,
			decoded{Type: "content_block_delta", Index: 2, Delta: [5]string{"text_delta", "é😀\n"}}},
		{`{"type":"message_delta","delta":null,"usage":{"output_tokens":"7"}}`, decoded{Type: "message_delta"}},
	}
	for _, tt := range tests {
		got, err := narrow([]byte(tt.in))
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", tt.in, got, tt.want)
		}
		if ref, _ := reference([]byte(tt.in)); !reflect.DeepEqual(got, ref) {
			t.Errorf("%s: reference disagrees: %+v", tt.in, ref)
		}
	}
	for _, in := range []string{``, `null`, `[]`, `{"type":"ping"`, `{"a":1}x`} {
		if _, err := narrow([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		} else if _, ok := err.(*jsonscan.Error); !ok {
			t.Errorf("%q: error %T, want *jsonscan.Error", in, err)
		}
	}
}

// FuzzDecodeEvent checks the decoder against encoding/json on any input:
// it fails exactly where encoding/json finds no JSON object, and otherwise
// reads the same fields as the reference.
func FuzzDecodeEvent(f *testing.F) {
	for _, name := range samples {
		f.Add(sample(f, name))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := narrow(data)
		want, ok := reference(data)
		switch {
		case !ok && err == nil:
			t.Fatalf("decoded %q, which is not a JSON object", data)
		case ok && err != nil:
			t.Fatalf("error %v on %q, a JSON object", err, data)
		case ok && !reflect.DeepEqual(got, want):
			t.Fatalf("on %q\ngot  %+v\nwant %+v", data, got, want)
		}
	})
}

// FuzzDecodeEventMatchesSDK builds well-formed events from fuzzed values
// and checks the decoder reads what the adapter took from the SDK's
// MessageStreamEventUnion.
func FuzzDecodeEventMatchesSDK(f *testing.F) {
	f.Add(uint8(0), int64(0), "Hello", "toolu_1", "f", int64(10))
	f.Add(uint8(1), int64(2), "\xff<&>\u2028\"", "", "", int64(-3))
	f.Add(uint8(2), int64(1), `{"a":`, "", "", int64(0))
	f.Add(uint8(3), int64(0), "end_turn", "", "", int64(99))
	f.Fuzz(func(t *testing.T, kind uint8, index int64, text, id, name string, tokens int64) {
		var ev map[string]any
		switch kind % 4 {
		case 0:
			ev = map[string]any{"type": "content_block_start", "index": index,
				"content_block": map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}}}
			if kind&4 != 0 {
				ev["content_block"] = map[string]any{"type": "text", "text": text, "citations": nil}
			}
		case 1:
			ev = map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": text}}
			if kind&4 != 0 {
				ev["delta"] = map[string]any{"type": "thinking_delta", "thinking": text}
			}
		case 2:
			ev = map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": text}}
		case 3:
			ev = map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": text, "stop_sequence": nil},
				"usage": map[string]any{"output_tokens": tokens, "input_tokens": index, "cache_read_input_tokens": tokens,
					"output_tokens_details": map[string]any{"thinking_tokens": index}}}
			if kind&4 != 0 {
				ev = map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message", "role": "assistant",
					"content": []any{}, "model": name, "usage": map[string]any{"input_tokens": tokens, "output_tokens": index,
						"cache_creation_input_tokens": index}}}
			}
		}
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := narrow(data)
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		var se sdk.MessageStreamEventUnion
		if err := json.Unmarshal(data, &se); err != nil {
			t.Fatalf("SDK: %v", err)
		}
		want := decoded{Type: se.Type, Index: se.Index,
			Block: [5]string{se.ContentBlock.Type, se.ContentBlock.ID, se.ContentBlock.Name, se.ContentBlock.Text, se.ContentBlock.Thinking},
			Delta: [5]string{se.Delta.Type, se.Delta.Text, se.Delta.Thinking, se.Delta.PartialJSON, string(se.Delta.StopReason)},
		}
		mu := se.Message.Usage
		want.MessageUsage = [5]int64{mu.InputTokens, mu.CacheCreationInputTokens, mu.CacheReadInputTokens, mu.OutputTokens, 0}
		u := se.Usage
		want.Usage = [5]int64{u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens, u.OutputTokensDetails.ThinkingTokens}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("on %s\ngot  %+v\nwant %+v (the SDK)", data, got, want)
		}
	})
}

// BenchmarkDecodeEvent compares the narrow decoder with the SDK's
// MessageStreamEventUnion (reflective apijson) on real events.
func BenchmarkDecodeEvent(b *testing.B) {
	for _, name := range []string{"text", "tool", "usage"} {
		data := sample(b, "event-"+name+".json")
		b.Run(name+"/narrow", func(b *testing.B) {
			var d eventDecoder
			var ev event
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := d.decode(data, &ev); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/sdk", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var ev sdk.MessageStreamEventUnion
				if err := json.Unmarshal(data, &ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
