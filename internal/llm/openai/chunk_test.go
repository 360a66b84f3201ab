package openai

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/agentchat/agentchat/internal/llm/internal/jsonscan"
	"github.com/agentchat/agentchat/internal/llm/internal/sse"
)

// decoded is what the adapter takes from a chunk, in a comparable form.
type decoded struct {
	IsError  bool
	HasUsage bool
	Usage    [4]int64 // prompt, completion, reasoning, cached prompt tokens
	Choices  []decodedChoice
}

type decodedChoice struct {
	Index                       int64
	Content, Refusal            string
	ReasoningContent, Reasoning string
	FinishReason                string
	ToolCalls                   []decodedToolCall
}

type decodedToolCall struct {
	Index          int64
	ID, Name, Args string
}

func narrow(data []byte) (decoded, error) {
	var d chunkDecoder
	var c chunk
	if err := d.decode(data, &c); err != nil {
		return decoded{}, err
	}
	out := decoded{IsError: c.isError, HasUsage: c.hasUsage,
		Usage: [4]int64{c.usage.promptTokens, c.usage.completionTokens, c.usage.reasoningTokens, c.usage.cachedTokens}}
	for _, ch := range c.choices {
		dc := decodedChoice{
			Index: ch.index, FinishReason: ch.finishReason,
			Content: ch.delta.content, Refusal: ch.delta.refusal,
			ReasoningContent: ch.delta.reasoningContent, Reasoning: ch.delta.reasoning,
		}
		for _, tc := range ch.delta.toolCalls {
			dc.ToolCalls = append(dc.ToolCalls, decodedToolCall{tc.index, tc.id, tc.name, tc.args})
		}
		out.Choices = append(out.Choices, dc)
	}
	return out, nil
}

// reference decodes data with encoding/json into a generic tree and reads
// the fields with the decoder's documented rules: exact keys, the last of
// repeated keys, other types and null taken as absent, non-object array
// elements skipped. ok is false when data is not a JSON object or null.
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
	if v != nil && !isObj {
		return out, false
	}
	str := func(v any) string { s, _ := v.(string); return s }
	num := func(v any) int64 {
		n, _ := v.(json.Number)
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
	objects := func(v any) (out []map[string]any) {
		a, _ := v.([]any)
		for _, e := range a {
			if m, ok := e.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	_, out.IsError = top["error"]
	if u, ok := top["usage"].(map[string]any); ok {
		out.HasUsage = true
		details, _ := u["completion_tokens_details"].(map[string]any)
		prompt, _ := u["prompt_tokens_details"].(map[string]any)
		out.Usage = [4]int64{num(u["prompt_tokens"]), num(u["completion_tokens"]), num(details["reasoning_tokens"]), num(prompt["cached_tokens"])}
	}
	for _, ch := range objects(top["choices"]) {
		d, _ := ch["delta"].(map[string]any)
		dc := decodedChoice{
			Index: num(ch["index"]), FinishReason: str(ch["finish_reason"]),
			Content: str(d["content"]), Refusal: str(d["refusal"]),
			ReasoningContent: str(d["reasoning_content"]), Reasoning: str(d["reasoning"]),
		}
		for _, tc := range objects(d["tool_calls"]) {
			fn, _ := tc["function"].(map[string]any)
			dc.ToolCalls = append(dc.ToolCalls, decodedToolCall{num(tc["index"]), str(tc["id"]), str(fn["name"]), str(fn["arguments"])})
		}
		out.Choices = append(out.Choices, dc)
	}
	return out, true
}

// fromSDK is what the adapter took from the SDK's decoded chunk before.
func fromSDK(c *sdk.ChatCompletionChunk) decoded {
	out := decoded{HasUsage: c.JSON.Usage.Valid()}
	if out.HasUsage {
		out.Usage = [4]int64{c.Usage.PromptTokens, c.Usage.CompletionTokens, c.Usage.CompletionTokensDetails.ReasoningTokens, c.Usage.PromptTokensDetails.CachedTokens}
	}
	extra := func(d sdk.ChatCompletionChunkChoiceDelta, name string) string {
		var s string
		if f, ok := d.JSON.ExtraFields[name]; ok {
			json.Unmarshal([]byte(f.Raw()), &s)
		}
		return s
	}
	for _, ch := range c.Choices {
		dc := decodedChoice{
			Index: ch.Index, FinishReason: ch.FinishReason,
			Content: ch.Delta.Content, Refusal: ch.Delta.Refusal,
			ReasoningContent: extra(ch.Delta, "reasoning_content"), Reasoning: extra(ch.Delta, "reasoning"),
		}
		for _, tc := range ch.Delta.ToolCalls {
			dc.ToolCalls = append(dc.ToolCalls, decodedToolCall{tc.Index, tc.ID, tc.Function.Name, tc.Function.Arguments})
		}
		out.Choices = append(out.Choices, dc)
	}
	return out
}

func sample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

var samples = []string{"chunk-text.json", "chunk-tool.json", "chunk-usage.json", "chunk-reasoning.json"}

func TestDecodeChunk(t *testing.T) {
	t.Parallel()
	choice := func(c decodedChoice) decoded { return decoded{Choices: []decodedChoice{c}} }
	tests := []struct {
		name string
		in   string
		want decoded
	}{
		{"text sample", string(sample(t, "chunk-text.json")), choice(decodedChoice{Content: " world"})},
		{"tool sample", string(sample(t, "chunk-tool.json")), choice(decodedChoice{
			ToolCalls: []decodedToolCall{{Args: `{"location":`}}})},
		{"usage sample", string(sample(t, "chunk-usage.json")), decoded{HasUsage: true, Usage: [4]int64{19, 10, 0, 0}}},
		{"reasoning sample", string(sample(t, "chunk-reasoning.json")), choice(decodedChoice{ReasoningContent: "嗯，用户"})},
		{"escapes", `{"choices":[{"delta":{"content":"a\"b\\c\/d\b\f\n\r\t\u00e9\u4e2d"}}]}`,
			choice(decodedChoice{Content: "a\"b\\c/d\b\f\n\r\t\u00e9中"})},
		{"surrogate pair", `{"choices":[{"delta":{"content":"\ud83d\ude00!"}}]}`, choice(decodedChoice{Content: "😀!"})},
		{"lone surrogates", `{"choices":[{"delta":{"content":"\ud83d-\ude00-\ud83d\u0041"}}]}`,
			choice(decodedChoice{Content: "\ufffd-\ufffd-\ufffdA"})},
		{"invalid UTF-8", "{\"choices\":[{\"delta\":{\"content\":\"a\xffb\xe4\xb8\"}}]}", choice(decodedChoice{Content: "a\ufffdb\ufffd\ufffd"})},
		{"raw UTF-8", `{"choices":[{"delta":{"content":"中文 😀"}}]}`, choice(decodedChoice{Content: "中文 😀"})},
		{"any order, whitespace", " \n{ \"choices\" :\t[ { \"finish_reason\" : \"stop\" , \"delta\" : { \"refusal\" : \"no\" } , \"index\" : 0 } ] }\r\n",
			choice(decodedChoice{Refusal: "no", FinishReason: "stop"})},
		{"nulls are absent", `{"choices":[{"index":null,"delta":{"content":null,"tool_calls":null},"finish_reason":null}],"usage":null}`,
			choice(decodedChoice{})},
		{"other types are absent", `{"choices":[{"index":"1","delta":{"content":5,"reasoning":{"a":1}},"finish_reason":[]}],"usage":[1]}`,
			choice(decodedChoice{})},
		{"unknown members skipped", `{"x":{"y":[1,-2.5e3,true,false,null,"s\"",{}]},"choices":[{"logprobs":{"content":[{"t":1}]},"delta":{"audio":{"id":"a"},"content":"ok"}}]}`,
			choice(decodedChoice{Content: "ok"})},
		{"last of repeated keys", `{"choices":[{"delta":{"content":"a","content":"b"},"delta":{"refusal":"r"}}]}`,
			choice(decodedChoice{Refusal: "r"})},
		{"escaped key", `{"choices":[{"delta":{"con\u0074ent":"k"}}]}`, choice(decodedChoice{Content: "k"})},
		{"non-integer index", `{"choices":[{"index":1.9,"delta":{}},{"index":2e0}]}`,
			decoded{Choices: []decodedChoice{{Index: 1}, {Index: 2}}}},
		{"tool calls", `{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c","type":"function","function":{"name":"f","arguments":""}},7]}}]}`,
			choice(decodedChoice{ToolCalls: []decodedToolCall{{Index: 1, ID: "c", Name: "f"}}})},
		{"error event", `{"error":{"message":"boom","type":"server_error"}}`, decoded{IsError: true}},
		{"null error", `{"error":null}`, decoded{IsError: true}},
		{"null chunk", `null`, decoded{}},
		{"reasoning tokens", `{"usage":{"completion_tokens_details":{"reasoning_tokens":7}}}`, decoded{HasUsage: true, Usage: [4]int64{0, 0, 7, 0}}},
		{"cached tokens", `{"usage":{"prompt_tokens":90,"prompt_tokens_details":{"cached_tokens":64,"audio_tokens":0}}}`, decoded{HasUsage: true, Usage: [4]int64{90, 0, 0, 64}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := narrow([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if ref, ok := reference([]byte(tt.in)); !ok || !reflect.DeepEqual(got, ref) {
				t.Errorf("reference disagrees: %+v", ref)
			}
		})
	}
}

func TestDecodeChunkErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		``, ` `, `{`, `{"choices":[{"index":0,"delta":{"content":"trunc`, `[]`, `"s"`, `1`, `true`,
		`{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":1e}`, `{"a":tru}`,
		`{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12g4"}`, "{\"a\":\"\x01\"}", `{"a":[1 2]}`, `{} {}`, `{}x`,
		`{"choices":[{"delta":{"content":"a"}]}`, `{"usage":{"prompt_tokens":1,}}`, `nul`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		`{"a":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
	} {
		if _, err := narrow([]byte(in)); err == nil {
			t.Errorf("%.40q: no error", in)
		} else if _, ok := err.(*jsonscan.Error); !ok {
			t.Errorf("%.40q: error %T, want *jsonscan.Error", in, err)
		}
	}
	// The depth bound is encoding/json's: 10000 levels are fine.
	in := `{"a":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`
	if _, err := narrow([]byte(in)); err != nil || !json.Valid([]byte(in)) {
		t.Errorf("10000 levels: %v (json.Valid %v)", err, json.Valid([]byte(in)))
	}
}

// FuzzDecodeChunk checks the decoder against encoding/json on any input:
// it fails exactly where encoding/json finds no JSON object (or null), and
// otherwise reads the same fields as the reference. The seed corpus is the
// samples in testdata and testdata/fuzz/FuzzDecodeChunk.
func FuzzDecodeChunk(f *testing.F) {
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

// FuzzDecodeMatchesSDK builds well-formed chunks from fuzzed values and
// checks the decoder reads what the SDK's ChatCompletionChunk did.
func FuzzDecodeMatchesSDK(f *testing.F) {
	f.Add("Hello", "", "think", "", "", "f", `{"a":1}`, int64(0), int64(0), uint8(0))
	f.Add(" wor\"ld\n", "no", "", "r", "stop", "", "", int64(3), int64(-1), uint8(0xff))
	f.Add("\xff\u2028<&>", "", "\x00", "", "tool_calls", "call_1", "\\u0041", int64(math.MaxInt64), int64(1), uint8(0x55))
	f.Fuzz(func(t *testing.T, content, refusal, reasoningContent, reasoning, finish, id, args string, index, tokens int64, flags uint8) {
		delta := map[string]any{}
		put := func(bit uint8, key string, v any) {
			if flags&bit != 0 {
				delta[key] = v
			}
		}
		put(1, "content", content)
		put(2, "refusal", refusal)
		put(4, "reasoning_content", reasoningContent)
		put(8, "reasoning", reasoning)
		put(16, "tool_calls", []any{
			map[string]any{"index": index, "id": id, "type": "function", "function": map[string]any{"name": id, "arguments": args}},
			map[string]any{"index": tokens, "function": map[string]any{"arguments": content}},
		})
		ch := map[string]any{"index": index % 2, "delta": delta, "logprobs": nil, "finish_reason": nil}
		if finish != "" {
			ch["finish_reason"] = finish
		}
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": tokens, "model": "m", "choices": []any{ch}}
		switch {
		case flags&32 != 0:
			c["usage"] = map[string]any{"prompt_tokens": tokens, "completion_tokens": index, "total_tokens": 0,
				"completion_tokens_details": map[string]any{"reasoning_tokens": tokens / 2}}
		case flags&64 != 0:
			c["usage"] = nil
		}
		marshal := json.Marshal
		if flags&128 != 0 {
			marshal = func(v any) ([]byte, error) { return json.MarshalIndent(v, " ", "\t") }
		}
		data, err := marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := narrow(data)
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		var sc sdk.ChatCompletionChunk
		if err := json.Unmarshal(data, &sc); err != nil {
			t.Fatalf("SDK: %v", err)
		}
		if want := fromSDK(&sc); !reflect.DeepEqual(got, want) {
			t.Fatalf("on %s\ngot  %+v\nwant %+v (the SDK)", data, got, want)
		}
	})
}

// FuzzEvents feeds arbitrary bodies through the event reader and the
// decoder: nothing may panic.
func FuzzEvents(f *testing.F) {
	for _, name := range samples {
		f.Add([]byte("data: " + string(sample(f, name)) + "\n\n"))
	}
	f.Add([]byte("data: [DONE]\r\n\r\n: x\ndata\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		e := sse.NewReader(bytes.NewReader(body))
		var d chunkDecoder
		var c chunk
		for {
			_, data, err := e.Next()
			if err != nil {
				return
			}
			d.decode(data, &c)
		}
	})
}

// BenchmarkDecodeChunk compares the narrow decoder with the SDK's
// ChatCompletionChunk (reflective apijson), and with encoding/json into a
// small concrete struct, on real chunks.
func BenchmarkDecodeChunk(b *testing.B) {
	type stdChunk struct {
		Choices []struct {
			Index int64 `json:"index"`
			Delta struct {
				Content          string `json:"content"`
				Refusal          string `json:"refusal"`
				ReasoningContent string `json:"reasoning_content"`
				Reasoning        string `json:"reasoning"`
				ToolCalls        []struct {
					Index    int64  `json:"index"`
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens            int64 `json:"prompt_tokens"`
			CompletionTokens        int64 `json:"completion_tokens"`
			CompletionTokensDetails struct {
				ReasoningTokens int64 `json:"reasoning_tokens"`
			} `json:"completion_tokens_details"`
		} `json:"usage"`
		Error json.RawMessage `json:"error"`
	}
	for _, name := range []string{"text", "tool", "usage"} {
		data := sample(b, "chunk-"+name+".json")
		b.Run(name+"/narrow", func(b *testing.B) {
			var d chunkDecoder
			var c chunk
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := d.decode(data, &c); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/sdk", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var c sdk.ChatCompletionChunk
				if err := c.UnmarshalJSON(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/stdjson", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var c stdChunk
				if err := json.Unmarshal(data, &c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
