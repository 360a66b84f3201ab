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
// The SDK builds, authenticates and sends the request and maps a refused
// call to its error; the stream itself (SSE framing and chunk JSON) is
// decoded here, into only the fields above and without reflection, since
// the SDK's reflective decoder cost more than a third of the server's CPU
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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/internal/jsonscan"
	"github.com/agentchat/agentchat/internal/llm/internal/sse"
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
	cfg      Config
	service  sdk.ChatCompletionService
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
	// NewChatCompletionService, unlike NewClient, reads no environment
	// variables (OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_ORG_ID…): a key from
	// the environment must never be sent to a base URL it was not meant for.
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL + "/"),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &Model{
		cfg:     cfg,
		service: sdk.NewChatCompletionService(opts...),
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
	params, err := m.params(req)
	if err != nil {
		return nil, &llm.Error{Code: llm.CodeBadRequest, Message: "invalid model request: " + err.Error(), Err: err}
	}
	if err := m.provider.ContextError(ctx, nil); err != nil {
		return nil, err
	}

	reqCtx, stop, cancel := upstream.FirstAnswer(ctx, m.cfg.Timeout)
	// The SDK builds, authenticates and sends the request and maps a refusal
	// to its error; WithResponseBodyInto hands us the response with its body
	// unread (the SDK's stream is left without a decoder), so the chunks are
	// decoded here, without the SDK's reflective decoder on the path of
	// every token.
	var resp *http.Response
	err = m.service.NewStreaming(reqCtx, params, option.WithResponseBodyInto(&resp)).Err()
	timedOut := stop()
	if err != nil || timedOut {
		if err == nil && resp != nil {
			resp.Body.Close()
		}
		cancel()
		return nil, m.startError(ctx, err, resp, timedOut)
	}
	return &stream{
		ctx:      ctx,
		cancel:   cancel,
		provider: m.provider,
		body:     resp.Body,
		events:   sse.NewReader(resp.Body),
	}, nil
}

func (m *Model) startError(ctx context.Context, err error, resp *http.Response, timedOut bool) error {
	if resp != nil && resp.StatusCode >= 400 && ctx.Err() == nil {
		// The SDK has read the error body and put it back on resp; read it
		// ourselves, since the SDK decodes only {"error":{…}} and providers
		// and proxies answer in other shapes too (or in HTML).
		var body []byte
		if resp.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		}
		return m.provider.StatusError(resp.StatusCode, resp.Header, upstream.ErrorBodyMessage(body), err)
	}
	if err == nil {
		err = context.DeadlineExceeded
	}
	return m.provider.StartError(ctx, err, timedOut, m.cfg.Timeout)
}

// params translates req to the SDK's request.
func (m *Model) params(req llm.Request) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{
		Model:         shared.ChatModel(cmp.Or(req.Model, m.cfg.Model)),
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)},
	}
	for i, msg := range req.Messages {
		mp, err := message(msg)
		if err != nil {
			return p, fmt.Errorf("message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, mp)
	}
	for _, t := range req.Tools {
		params := shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
		if len(bytes.TrimSpace(t.Parameters)) > 0 {
			params = nil
			if err := json.Unmarshal(t.Parameters, &params); err != nil {
				return p, fmt.Errorf("tool %s: parameters are not a JSON object: %w", t.Name, err)
			}
		}
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
		if t.Description != "" {
			def.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(def))
	}
	if req.MaxTokens > 0 {
		if m.maxCompletionTokens {
			p.MaxCompletionTokens = sdk.Int(int64(req.MaxTokens))
		} else {
			p.MaxTokens = sdk.Int(int64(req.MaxTokens))
		}
	}
	if req.Temperature != nil {
		p.Temperature = sdk.Float(*req.Temperature)
	}
	if req.JSONObject {
		p.ResponseFormat.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
	}
	return p, nil
}

func message(msg llm.Message) (sdk.ChatCompletionMessageParamUnion, error) {
	switch msg.Role {
	case llm.RoleSystem:
		return sdk.SystemMessage(msg.Content), nil
	case llm.RoleUser:
		if len(msg.Parts) == 0 {
			return sdk.UserMessage(msg.Content), nil
		}
		var parts []sdk.ChatCompletionContentPartUnionParam
		for _, part := range msg.Parts {
			switch part.Type {
			case "text":
				parts = append(parts, sdk.TextContentPart(part.Text))
			case "image_url":
				parts = append(parts, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: part.ImageURL}))
			default:
				return sdk.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown part type %q", part.Type)
			}
		}
		return sdk.UserMessage(parts), nil
	case llm.RoleAssistant:
		var a sdk.ChatCompletionAssistantMessageParam
		if msg.Content != "" || len(msg.ToolCalls) == 0 {
			a.Content.OfString = sdk.String(msg.Content)
		}
		for _, c := range msg.ToolCalls {
			args := string(c.Arguments)
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID:       c.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: args},
				},
			})
		}
		return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	case llm.RoleTool:
		return sdk.ToolMessage(msg.Content, msg.ToolCallID), nil
	}
	return sdk.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", msg.Role)
}

// stream decodes a Chat Completions event stream into llm chunks.
type stream struct {
	ctx      context.Context // the caller's: tells cancellation from failure
	cancel   func()          // ends the request
	provider upstream.Provider
	body     io.ReadCloser
	events   *sse.Reader
	dec      chunkDecoder
	chunk    chunk // the last decoded; its slices are reused

	queue    []llm.Chunk // converted from the current chunk; reused
	queued   int         // how many of queue were delivered
	cur      llm.Chunk
	tools    toolIndex
	usage    *llm.Usage
	finished bool // a finish reason arrived
	ended    bool
	err      error
	closed   bool
}

func (s *stream) Next() bool {
	for {
		if !s.ended && s.ctx.Err() != nil {
			// Once ctx has ended, nothing more is delivered, not even
			// chunks already received: the caller has moved on.
			s.queue, s.queued = s.queue[:0], 0
			s.end(s.ctx.Err())
		}
		if s.queued < len(s.queue) {
			s.cur = s.queue[s.queued]
			s.queue[s.queued] = llm.Chunk{}
			s.queued++
			return true
		}
		s.queue, s.queued = s.queue[:0], 0
		if s.ended {
			return false
		}
		_, data, err := s.events.Next()
		switch {
		case errors.Is(err, io.EOF):
			s.end(nil)
		case err != nil:
			s.end(err)
		case bytes.HasPrefix(data, []byte("[DONE]")):
			// The SDK's rule: the event that starts with the marker ends
			// the stream, whatever follows.
			s.end(nil)
		default:
			if err := s.dec.decode(data, &s.chunk); err != nil {
				s.end(err)
			} else if s.chunk.isError {
				s.end(&eventError{data: bytes.Clone(data)})
			} else {
				s.convert(&s.chunk)
			}
		}
	}
}

// convert queues the llm chunks of one decoded chunk, in the order a reader
// would see them: reasoning, text, tool calls, finish.
func (s *stream) convert(c *chunk) {
	if c.hasUsage {
		u := llm.Usage{
			InputTokens:     int(c.usage.promptTokens),
			OutputTokens:    int(c.usage.completionTokens),
			ReasoningTokens: int(c.usage.reasoningTokens),
		}
		s.usage = &u
	}
	for i := range c.choices {
		ch := &c.choices[i]
		if ch.index != 0 { // we never ask for n > 1
			continue
		}
		d := &ch.delta
		if r := cmp.Or(d.reasoningContent, d.reasoning); r != "" {
			s.queue = append(s.queue, llm.Chunk{Reasoning: r})
		}
		if d.content != "" {
			s.queue = append(s.queue, llm.Chunk{Text: d.content})
		}
		if d.refusal != "" { // the model's own words, shown like text
			s.queue = append(s.queue, llm.Chunk{Text: d.refusal})
		}
		for _, tc := range d.toolCalls {
			if delta, ok := s.tools.delta(tc); ok {
				s.queue = append(s.queue, llm.Chunk{ToolCall: &delta})
			}
		}
		if ch.finishReason != "" {
			s.finished = true
			s.queue = append(s.queue, llm.Chunk{FinishReason: finishReason(ch.finishReason)})
		}
	}
}

func finishReason(r string) string {
	if r == "function_call" { // the legacy name of tool_calls
		return "tool_calls"
	}
	return r
}

// eventError is an in-stream error event, such as
// {"error":{"message":"…","type":"server_error"}}.
type eventError struct{ data []byte }

func (e *eventError) Error() string {
	const max = 1 << 10
	d := bytes.TrimSpace(e.data)
	if len(d) > max {
		return "error event while streaming: " + string(d[:max]) + "…"
	}
	return "error event while streaming: " + string(d)
}

// end settles how the stream ended: cleanly after its end marker (then
// the usage, if any, is the last chunk), or with the error to report.
func (s *stream) end(err error) {
	s.ended = true
	defer s.release()
	if cerr := s.provider.ContextError(s.ctx, err); cerr != nil {
		s.err = cerr
		return
	}
	var evErr *eventError
	var decErr *jsonscan.Error
	switch {
	case errors.As(err, &evErr):
		s.err = s.inStreamError(evErr)
	case errors.As(err, &decErr), errors.Is(err, sse.ErrTooLarge):
		s.err = s.provider.BadStream(err)
	case err != nil:
		s.err = s.provider.StreamCut(err)
	case !s.finished && !s.events.Done():
		s.err = s.provider.StreamCut(nil)
	case s.usage != nil:
		s.queue = append(s.queue, llm.Chunk{Usage: s.usage})
	}
}

// inStreamError maps an error event sent after the stream began. It is
// rare, so encoding/json decodes it.
func (s *stream) inStreamError(e *eventError) *llm.Error {
	var body struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(e.data, &body)
	code := llm.CodeUnknown
	switch kind := strings.ToLower(body.Error.Type + " " + fmt.Sprint(body.Error.Code)); {
	case strings.Contains(kind, "rate_limit"):
		code = llm.CodeRateLimited
	case strings.Contains(kind, "server_error"), strings.Contains(kind, "overloaded"):
		code = llm.CodeUnavailable
	}
	msg := s.provider.Scrub(cmp.Or(body.Error.Message, "no message"))
	return &llm.Error{
		Code:    code,
		Message: "the model provider (" + s.provider.Host + ") failed mid-answer: " + msg,
		Err:     s.provider.Cause(e),
	}
}

func (s *stream) Chunk() llm.Chunk { return s.cur }

func (s *stream) Err() error { return s.err }

func (s *stream) Close() error {
	s.release()
	return nil
}

// release ends the upstream request: closing the body stops the read,
// cancelling the context stops a request still in flight.
func (s *stream) release() {
	if s.closed {
		return
	}
	s.closed = true
	s.body.Close()
	s.cancel()
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
