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
// passed off as complete. The SDK's own retries are off: llm.WithRetry does
// the retrying, so there is one bounded, cancellable retry loop.
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
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentchat/agentchat/internal/llm"
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
	// ctx only: a long answer is not a hung provider. Default 60s; negative: no bound.
	Timeout time.Duration
	// MaxRetries is how often a refused call (429, 5xx, unreachable) is
	// retried, before any chunk. Default 2; negative: no retries.
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
	cfg.Timeout = cmp.Or(cfg.Timeout, 60*time.Second)
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
	s := &stream{ctx: ctx, cancel: cancel, provider: m.provider, tools: newToolIndex()}
	var resp *http.Response
	sdkStream := m.service.NewStreaming(reqCtx, params,
		option.WithResponseInto(&resp),
		option.WithMiddleware(s.watchDone),
	)
	timedOut := stop()
	if err := sdkStream.Err(); err != nil || timedOut {
		sdkStream.Close()
		cancel()
		return nil, m.startError(ctx, err, resp, timedOut)
	}
	s.sdk = sdkStream
	return s, nil
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

// stream adapts the SDK's chunk stream to llm.Stream.
type stream struct {
	ctx      context.Context // the caller's: tells cancellation from failure
	cancel   func()          // ends the request
	provider upstream.Provider
	sdk      *ssestream.Stream[sdk.ChatCompletionChunk]
	done     *doneWatcher

	pending  []llm.Chunk // converted from the current SDK chunk, not yet delivered
	cur      llm.Chunk
	tools    *toolIndex
	usage    *llm.Usage
	finished bool // a finish reason arrived
	ended    bool
	err      error
	closed   bool
}

// watchDone is a per-request SDK middleware: it wraps the streaming body to
// notice the data: [DONE] line, since the SDK ends a stream the same way on
// [DONE] and on a body that simply stopped.
func (s *stream) watchDone(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	if err == nil && resp != nil && resp.StatusCode < 300 && resp.Body != nil {
		s.done = &doneWatcher{ReadCloser: resp.Body}
		resp.Body = s.done
	}
	return resp, err
}

func (s *stream) Next() bool {
	for {
		if !s.ended && s.ctx.Err() != nil {
			// Once ctx has ended, nothing more is delivered, not even
			// chunks already received: the caller has moved on.
			s.pending = nil
			s.end(s.ctx.Err())
		}
		if len(s.pending) > 0 {
			s.cur, s.pending = s.pending[0], s.pending[1:]
			return true
		}
		if s.ended {
			return false
		}
		if !s.sdk.Next() {
			s.end(s.sdk.Err())
			continue
		}
		s.convert(s.sdk.Current())
	}
}

// convert queues the llm chunks of one SDK chunk, in the order a reader
// would see them: reasoning, text, tool calls, finish.
func (s *stream) convert(c sdk.ChatCompletionChunk) {
	if c.JSON.Usage.Valid() {
		u := llm.Usage{
			InputTokens:     int(c.Usage.PromptTokens),
			OutputTokens:    int(c.Usage.CompletionTokens),
			ReasoningTokens: int(c.Usage.CompletionTokensDetails.ReasoningTokens),
		}
		s.usage = &u
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 { // we never ask for n > 1
			continue
		}
		d := ch.Delta
		if r := reasoning(d); r != "" {
			s.pending = append(s.pending, llm.Chunk{Reasoning: r})
		}
		if d.Content != "" {
			s.pending = append(s.pending, llm.Chunk{Text: d.Content})
		}
		if d.Refusal != "" { // the model's own words, shown like text
			s.pending = append(s.pending, llm.Chunk{Text: d.Refusal})
		}
		for _, tc := range d.ToolCalls {
			if delta, ok := s.tools.delta(tc); ok {
				s.pending = append(s.pending, llm.Chunk{ToolCall: &delta})
			}
		}
		if ch.FinishReason != "" {
			s.finished = true
			s.pending = append(s.pending, llm.Chunk{FinishReason: finishReason(ch.FinishReason)})
		}
	}
}

// reasoning reads the reasoning delta that DeepSeek, Qwen, vLLM and others
// add to the OpenAI delta as reasoning_content (some newer servers:
// reasoning). The SDK keeps unknown fields raw.
func reasoning(d sdk.ChatCompletionChunkChoiceDelta) string {
	for _, name := range [...]string{"reasoning_content", "reasoning"} {
		// The SDK marks unknown fields as not Valid; their raw JSON is kept.
		f, ok := d.JSON.ExtraFields[name]
		if !ok {
			continue
		}
		var text string
		if json.Unmarshal([]byte(f.Raw()), &text) == nil && text != "" {
			return text
		}
	}
	return ""
}

func finishReason(r string) string {
	if r == "function_call" { // the legacy name of tool_calls
		return "tool_calls"
	}
	return r
}

// end settles how the SDK stream ended: cleanly after its end marker (then
// the usage, if any, is the last chunk), or with the error to report.
func (s *stream) end(err error) {
	s.ended = true
	defer s.release()
	if cerr := s.provider.ContextError(s.ctx, err); cerr != nil {
		s.err = cerr
		return
	}
	var streamErr *ssestream.StreamError
	switch {
	case errors.As(err, &streamErr):
		s.err = s.inStreamError(streamErr)
	case err != nil && upstream.IsParseError(err):
		s.err = s.provider.BadStream(err)
	case err != nil:
		s.err = s.provider.StreamCut(err)
	case !s.finished && (s.done == nil || !s.done.seen):
		s.err = s.provider.StreamCut(nil)
	case s.usage != nil:
		s.pending = append(s.pending, llm.Chunk{Usage: s.usage})
	}
}

// inStreamError maps an error event sent after the stream began, such as
// {"error":{"message":"…","type":"server_error"}}.
func (s *stream) inStreamError(e *ssestream.StreamError) *llm.Error {
	var body struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(e.Event.Data, &body)
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
	s.sdk.Close()
	s.cancel()
}

// toolIndex renumbers tool-call deltas. Most servers number parallel calls
// 0, 1, …; a few send every call as index 0 with a new id. A new id at a
// known index therefore starts a new call.
type toolIndex struct {
	byUpstream map[int64]int
	ids        []string
}

func newToolIndex() *toolIndex { return &toolIndex{byUpstream: map[int64]int{}} }

func (t *toolIndex) delta(tc sdk.ChatCompletionChunkChoiceDeltaToolCall) (llm.ToolCallDelta, bool) {
	i, known := t.byUpstream[tc.Index]
	if !known || (tc.ID != "" && t.ids[i] != "" && t.ids[i] != tc.ID) {
		i = len(t.ids)
		t.ids = append(t.ids, "")
		t.byUpstream[tc.Index] = i
		d := llm.ToolCallDelta{Index: i, ID: tc.ID, Name: tc.Function.Name, ArgsDelta: tc.Function.Arguments}
		t.ids[i] = tc.ID
		return d, true
	}
	if t.ids[i] == "" && tc.ID != "" {
		t.ids[i] = tc.ID
	}
	// Later deltas carry only argument fragments; some servers repeat the
	// name on each, which consumers must not take for a new call.
	if tc.Function.Arguments == "" {
		return llm.ToolCallDelta{}, false
	}
	return llm.ToolCallDelta{Index: i, ArgsDelta: tc.Function.Arguments}, true
}

// doneWatcher notices a "data: [DONE]" line in the bytes read through it.
type doneWatcher struct {
	io.ReadCloser
	line []byte // the start of the current line
	long bool   // the current line is longer than any marker
	seen bool
}

func (d *doneWatcher) Read(p []byte) (int, error) {
	n, err := d.ReadCloser.Read(p)
	for _, b := range p[:n] {
		switch {
		case b == '\n' || b == '\r':
			if l := string(d.line); !d.long && (l == "data: [DONE]" || l == "data:[DONE]") {
				d.seen = true
			}
			d.line, d.long = d.line[:0], false
		case d.long:
		case len(d.line) < 16:
			d.line = append(d.line, b)
		default:
			d.long = true
		}
	}
	return n, err
}
