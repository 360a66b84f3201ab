// Package openai adapts OpenAI-compatible Chat Completions APIs to llm.Model,
// through the official SDK (github.com/openai/openai-go). One adapter serves
// OpenAI, DeepSeek, Qwen (DashScope), Moonshot, GLM, Ollama and vLLM: they
// differ only in BaseURL, APIKey and Model.
//
// The stream is chat.completion.chunk events. The adapter forwards, in the
// order they arrive: reasoning deltas (the reasoning_content field that
// thinking models such as DeepSeek-R1 and QwQ add to the delta, which the SDK
// has no field for), text deltas, tool-call deltas (renumbered from 0 in
// order of appearance, ID and Name on a call's first delta only), and the
// finish reason. Usage is requested (stream_options.include_usage) and
// reported once, as the last chunk, when the provider sends it.
//
// A stream ends cleanly only after its end marker, data: [DONE] or a finish
// reason; a body that stops before is llm.ErrStreamCut, never a short answer
// passed off as complete. An event that is not JSON is llm.CodeBadStream; an
// in-stream error event ({"error":{…}}) is mapped by its type. The SDK's own
// retries are off: llm.WithRetry does the retrying, so there is one bounded,
// cancellable retry loop.
//
// The adapter writes the request's JSON without reflection (body.go); the
// SDK authenticates and sends it and maps a refused call to its error. The stream is read by the loop the adapters share
// (internal/llm/internal/stream: transport, queueing, cancellation,
// errors); this package supplies only its decode step, which reads chunk
// JSON into only the fields above and without reflection, since the SDK's
// reflective decoder cost more than a third of the server's CPU
// (docs/benchmarks.md). FuzzDecodeChunk holds the decoder to encoding/json.
//
// Errors are *llm.Error (see llm's codes), except a cancelled ctx, which is
// reported as the context's error. Their texts never contain the API key.
//
// A Model is safe for concurrent use. A stream belongs to its caller, who
// must Close it (or read it to its end); cancelling ctx or closing the
// stream ends the upstream request at once, and after ctx ends Next
// delivers nothing more, not even chunks already received.
package openai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/internal/stream"
	"github.com/agentchat/agentchat/internal/llm/internal/upstream"
)

// DefaultBaseURL is OpenAI's own API.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures an OpenAI-compatible provider. Zero values mean the default.
type Config struct {
	// BaseURL is the API root, the part before /chat/completions, e.g.
	// https://api.deepseek.com/v1 or http://localhost:11434/v1 (Ollama).
	// Default DefaultBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token. Empty sends none, for local servers.
	// The adapter never reads OPENAI_API_KEY or other environment variables:
	// configuration is explicit.
	APIKey string
	// Model is used when a Request names none. Required.
	Model string
	// Timeout bounds the wait for the provider to start answering (its
	// response headers). The stream that follows is bounded by the caller's
	// ctx only: a long answer is not a hung provider. Default llm.DefaultTimeout;
	// negative: no bound.
	Timeout time.Duration
	// MaxRetries is how often a refused call (429, 5xx, unreachable) is
	// retried, before any chunk. Default llm.DefaultMaxRetries; negative: no retries.
	MaxRetries int
	// HTTPClient makes the requests. Default http.DefaultClient. Its Timeout,
	// if set, bounds whole streams, so leave it zero and use Timeout.
	HTTPClient *http.Client
}

// Model is an OpenAI-compatible chat model.
type Model struct {
	cfg Config
	// client sends requests with its Options only: no services, and none
	// of the environment NewClient reads.
	client   *sdk.Client
	provider upstream.Provider
	// maxCompletionTokens: OpenAI's own API refuses max_tokens for its newer
	// models and wants max_completion_tokens; compatible servers mostly know
	// only max_tokens.
	maxCompletionTokens bool
}

// New returns an OpenAI-compatible model, wrapped in llm.WithRetry with
// cfg.MaxRetries.
func New(cfg Config) (llm.Model, error) {
	m, err := newModel(cfg)
	if err != nil {
		return nil, err
	}
	return llm.WithRetry(m, llm.RetryPolicy{MaxRetries: cfg.MaxRetries}), nil
}

func newModel(cfg Config) (*Model, error) {
	cfg.BaseURL = strings.TrimRight(cmp.Or(cfg.BaseURL, DefaultBaseURL), "/")
	cfg.Timeout = cmp.Or(cfg.Timeout, llm.DefaultTimeout)
	cfg.HTTPClient = cmp.Or(cfg.HTTPClient, http.DefaultClient)
	if cfg.Model == "" {
		return nil, errors.New("openai: Config.Model is required")
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: Config.BaseURL %q is not an http(s) URL", upstream.HostOf(cfg.BaseURL))
	}
	// A Client holding only these options, unlike one from NewClient, reads
	// no environment variables (OPENAI_API_KEY, OPENAI_BASE_URL,
	// OPENAI_ORG_ID…): a key from the environment must never be sent to a
	// base URL it was not meant for.
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL + "/"),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &Model{
		cfg:    cfg,
		client: &sdk.Client{Options: opts},
		provider: upstream.Provider{
			Name:   "the model provider",
			Host:   u.Host,
			Secret: cfg.APIKey,
		},
		maxCompletionTokens: u.Host == "api.openai.com",
	}, nil
}

// Name is the model and the provider's host, e.g. "deepseek-chat (openai-compatible, api.deepseek.com)".
func (m *Model) Name() string {
	return fmt.Sprintf("%s (openai-compatible, %s)", m.cfg.Model, m.provider.Host)
}

// Stream starts a completion.
func (m *Model) Stream(ctx context.Context, req llm.Request) (llm.Stream, error) {
	body, err := m.body(req)
	if err != nil {
		return nil, stream.InvalidRequest(err)
	}
	// A *http.Response as the result hands the loop the response with its
	// body unread, so the chunks are decoded here, without the SDK's
	// reflective decoder on the path of every token.
	send := func(ctx context.Context) (resp *http.Response, err error) {
		err = m.client.Post(ctx, "chat/completions", body, &resp)
		return resp, err
	}
	return stream.Open(ctx, stream.Upstream{Provider: m.provider, Timeout: m.cfg.Timeout}, send,
		func(d *decoder, _ *http.Response) { d.provider = m.provider })
}

// audioFormat is input_audio's format for a media type: "wav", "mp3", or
// "" for a type the API does not take as audio.
func audioFormat(mediaType string) string {
	switch mediaType {
	case "audio/wave", "audio/wav", "audio/x-wav":
		return "wav"
	case "audio/mpeg", "audio/mp3":
		return "mp3"
	}
	return ""
}

// dataURL is an attached file's bytes as the data: URL OpenAI's image_url
// and file_data take.
func dataURL(p llm.Part) string {
	return "data:" + p.MediaType + ";base64," + base64.StdEncoding.EncodeToString(p.Data)
}

// decoder is the adapter's decode step (see package stream): it turns
// chat.completion.chunk events into llm chunks.
type decoder struct {
	provider upstream.Provider
	dec      chunkDecoder
	chunk    chunk // the last decoded; its slices are reused
	tools    toolIndex
	usage    *llm.Usage
	finished bool // a finish reason arrived
}

func (d *decoder) Event(_, data []byte, q []llm.Chunk) ([]llm.Chunk, bool, error) {
	if bytes.HasPrefix(data, []byte("[DONE]")) {
		// The SDK's rule: the event that starts with the marker ends the
		// stream, whatever follows.
		return q, true, nil
	}
	if err := d.dec.decode(data, &d.chunk); err != nil {
		return q, false, err
	}
	if d.chunk.isError {
		return q, false, d.inStreamError(data)
	}
	return d.convert(&d.chunk, q), false, nil
}

// End: the answer is complete after its end marker, [DONE] or a finish
// reason; then the usage, if any, is its last chunk.
func (d *decoder) End(q []llm.Chunk, doneLine bool) ([]llm.Chunk, bool) {
	if !d.finished && !doneLine {
		return q, false
	}
	if d.usage != nil {
		q = append(q, llm.Chunk{Usage: d.usage})
	}
	return q, true
}

// convert appends the llm chunks of one decoded chunk to q, in the order a
// reader would see them: reasoning, text, tool calls, finish.
func (d *decoder) convert(c *chunk, q []llm.Chunk) []llm.Chunk {
	if c.hasUsage {
		u := llm.Usage{
			InputTokens:     int(c.usage.promptTokens),
			OutputTokens:    int(c.usage.completionTokens),
			ReasoningTokens: int(c.usage.reasoningTokens),
			// A part of the prompt's tokens (prompt_tokens_details.cached_tokens).
			CachedInputTokens: int(c.usage.cachedTokens),
		}
		d.usage = &u
	}
	for i := range c.choices {
		ch := &c.choices[i]
		if ch.index != 0 { // we never ask for n > 1
			continue
		}
		dl := &ch.delta
		if r := cmp.Or(dl.reasoningContent, dl.reasoning); r != "" {
			q = append(q, llm.Chunk{Reasoning: r})
		}
		if dl.content != "" {
			q = append(q, llm.Chunk{Text: dl.content})
		}
		if dl.refusal != "" { // the model's own words, shown like text
			q = append(q, llm.Chunk{Text: dl.refusal})
		}
		for _, tc := range dl.toolCalls {
			if delta, ok := d.tools.delta(tc); ok {
				q = append(q, llm.Chunk{ToolCall: &delta})
			}
		}
		if ch.finishReason != "" {
			d.finished = true
			q = append(q, llm.Chunk{FinishReason: finishReason(ch.finishReason)})
		}
	}
	return q
}

func finishReason(r string) string {
	if r == "function_call" { // the legacy name of tool_calls
		return "tool_calls"
	}
	return r
}

// inStreamError maps an error event sent after the stream began, such as
// {"error":{"message":"…","type":"server_error"}}. It is rare, so
// encoding/json decodes it.
func (d *decoder) inStreamError(data []byte) *llm.Error {
	var body struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(data, &body)
	code := llm.CodeUnknown
	switch kind := strings.ToLower(body.Error.Type + " " + fmt.Sprint(body.Error.Code)); {
	case strings.Contains(kind, "rate_limit"):
		code = llm.CodeRateLimited
	case strings.Contains(kind, "server_error"), strings.Contains(kind, "overload"): // the provider's "overloaded", "overloaded_error"
		code = llm.CodeUnavailable
	}
	msg := d.provider.Scrub(cmp.Or(body.Error.Message, "no message"))
	return &llm.Error{
		Code:    code,
		Message: "the model provider (" + d.provider.Host + ") failed mid-answer: " + msg,
		Err:     d.provider.Cause(&eventError{data: bytes.Clone(data)}),
	}
}

// eventError is the cause of an in-stream error: the event as it came.
type eventError struct{ data []byte }

func (e *eventError) Error() string {
	const max = 1 << 10
	d := bytes.TrimSpace(e.data)
	if len(d) > max {
		return "error event while streaming: " + string(d[:max]) + "…"
	}
	return "error event while streaming: " + string(d)
}

// toolIndex renumbers tool-call deltas. Most servers number parallel calls
// 0, 1, …; a few send every call as index 0 with a new id. A new id at a
// known index therefore starts a new call.
type toolIndex struct {
	byUpstream map[int64]int
	ids        []string
}

func (t *toolIndex) delta(tc toolCall) (llm.ToolCallDelta, bool) {
	i, known := t.byUpstream[tc.index]
	if !known || (tc.id != "" && t.ids[i] != "" && t.ids[i] != tc.id) {
		if t.byUpstream == nil {
			t.byUpstream = map[int64]int{}
		}
		i = len(t.ids)
		t.ids = append(t.ids, tc.id)
		t.byUpstream[tc.index] = i
		return llm.ToolCallDelta{Index: i, ID: tc.id, Name: tc.name, ArgsDelta: tc.args}, true
	}
	if t.ids[i] == "" && tc.id != "" {
		t.ids[i] = tc.id
	}
	// Later deltas carry only argument fragments; some servers repeat the
	// name on each, which consumers must not take for a new call.
	if tc.args == "" {
		return llm.ToolCallDelta{}, false
	}
	return llm.ToolCallDelta{Index: i, ArgsDelta: tc.args}, true
}
