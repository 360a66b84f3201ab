// Package anthropic adapts the Anthropic Messages API to llm.Model, through
// the official SDK (github.com/anthropics/anthropic-sdk-go).
//
// Requests: system messages become the system parameter; an assistant's
// ToolCalls become tool_use blocks; tool messages become tool_result blocks
// in a user turn. Consecutive turns of the same side are merged, because the
// API wants user and assistant to alternate and every tool result of one
// assistant turn in the single user turn after it.
//
// The stream is message_start, content blocks (content_block_start, deltas,
// content_block_stop), message_delta and message_stop. The adapter forwards
// text_delta as Text, thinking_delta as Reasoning, and each tool_use block as
// a ToolCallDelta with ID and Name followed by its input_json_delta
// fragments; tool calls are numbered from 0 in order of appearance. The stop
// reason is translated to llm's finish reasons (end_turn → "stop", tool_use →
// "tool_calls", max_tokens → "length", refusal → "content_filter"). Usage,
// input tokens from message_start and output tokens from message_delta, is
// reported once, as the last chunk.
//
// A stream ends cleanly only with message_stop; a body that stops before it
// is llm.ErrStreamCut. The SDK's own retries are off: llm.WithRetry does the
// retrying. The SDK builds, authenticates and sends the request and maps a
// refused call to its error; the event stream itself is decoded here, into
// only the fields above and without reflection (see the openai adapter). Errors are *llm.Error, except a cancelled ctx, which is reported
// as the context's error. Their texts never contain the API key.
//
// A Model is safe for concurrent use. A stream belongs to its caller, who
// must Close it (or read it to its end); cancelling ctx or closing the
// stream ends the upstream request at once, and after ctx ends Next
// delivers nothing more.
//
// Not done: extended thinking is not requested, because a thinking turn that
// calls tools must send its signed thinking blocks back with the tool
// results, and llm.Message has nowhere to keep them. Request.Temperature is
// ignored: version 2 of the API has no temperature parameter.
package anthropic

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

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/internal/jsonscan"
	"github.com/agentchat/agentchat/internal/llm/internal/sse"
	"github.com/agentchat/agentchat/internal/llm/internal/upstream"
)

// defaultHost names the SDK's default endpoint in messages.
const defaultHost = "api.anthropic.com"

// Config configures the Anthropic provider. Zero values mean the default.
type Config struct {
	// BaseURL is the API root, without /v1/messages. Default the SDK's
	// (https://api.anthropic.com).
	BaseURL string
	// APIKey authenticates the calls. The adapter never reads
	// ANTHROPIC_API_KEY or other environment variables: configuration is explicit.
	APIKey string
	// Model is used when a Request names none. Required.
	Model string
	// MaxTokens caps each answer when a Request sets none; the API requires a cap. Default 4096.
	MaxTokens int
	// Timeout bounds the wait for the provider to start answering (its
	// response headers); the stream that follows is bounded by the caller's
	// ctx only. Default llm.DefaultTimeout; negative: no bound.
	Timeout time.Duration
	// MaxRetries is how often a refused call (429, 5xx, 529, unreachable) is
	// retried, before any chunk. Default llm.DefaultMaxRetries; negative: no retries.
	MaxRetries int
	// HTTPClient makes the requests. Default http.DefaultClient. Its Timeout,
	// if set, bounds whole streams, so leave it zero and use Timeout.
	HTTPClient *http.Client
}

// Model is an Anthropic model.
type Model struct {
	cfg      Config
	messages sdk.MessageService
	provider upstream.Provider
}

// New returns an Anthropic model, wrapped in llm.WithRetry with cfg.MaxRetries.
func New(cfg Config) (llm.Model, error) {
	m, err := newModel(cfg)
	if err != nil {
		return nil, err
	}
	return llm.WithRetry(m, llm.RetryPolicy{MaxRetries: cfg.MaxRetries}), nil
}

func newModel(cfg Config) (*Model, error) {
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	cfg.MaxTokens = cmp.Or(cfg.MaxTokens, 4096)
	cfg.Timeout = cmp.Or(cfg.Timeout, llm.DefaultTimeout)
	cfg.HTTPClient = cmp.Or(cfg.HTTPClient, http.DefaultClient)
	if cfg.Model == "" {
		return nil, errors.New("anthropic: Config.Model is required")
	}
	host := defaultHost
	// WithoutEnvironmentDefaults: the SDK must not pick up ANTHROPIC_API_KEY,
	// ANTHROPIC_BASE_URL or a credentials profile from the environment.
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(0),
	}
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("anthropic: Config.BaseURL %q is not an http(s) URL", upstream.HostOf(cfg.BaseURL))
		}
		host = u.Host
		opts = append(opts, option.WithBaseURL(cfg.BaseURL+"/"))
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	client := sdk.NewClient(opts...)
	return &Model{
		cfg:      cfg,
		messages: client.Messages,
		provider: upstream.Provider{Name: "the model provider", Host: host, Secret: cfg.APIKey},
	}, nil
}

// Name is the model and the provider's host, e.g. "claude-sonnet-4-5 (anthropic, api.anthropic.com)".
func (m *Model) Name() string {
	return fmt.Sprintf("%s (anthropic, %s)", m.cfg.Model, m.provider.Host)
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
	// unread (the SDK's stream is left without a decoder), so the events are
	// decoded here, without the SDK's reflective decoder on the path of
	// every token.
	var resp *http.Response
	err = m.messages.NewStreaming(reqCtx, params, option.WithResponseBodyInto(&resp)).Err()
	timedOut := stop()
	if err != nil || timedOut {
		if err == nil && resp != nil {
			resp.Body.Close()
		}
		cancel()
		return nil, m.startError(ctx, err, resp, timedOut)
	}
	return &stream{
		ctx: ctx, cancel: cancel, provider: m.provider,
		resp: resp, events: sse.NewReader(resp.Body),
	}, nil
}

func (m *Model) startError(ctx context.Context, err error, resp *http.Response, timedOut bool) error {
	if resp != nil && resp.StatusCode >= 400 && ctx.Err() == nil {
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

// turn is one side's consecutive content blocks.
type turn struct {
	assistant bool
	blocks    []sdk.ContentBlockParamUnion
}

func (m *Model) params(req llm.Request) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{
		Model:     sdk.Model(cmp.Or(req.Model, m.cfg.Model)),
		MaxTokens: int64(cmp.Or(req.MaxTokens, m.cfg.MaxTokens)),
	}
	var turns []turn
	add := func(assistant bool, blocks ...sdk.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(turns); n > 0 && turns[n-1].assistant == assistant {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			return
		}
		turns = append(turns, turn{assistant: assistant, blocks: blocks})
	}
	for i, msg := range req.Messages {
		switch msg.Role {
		case llm.RoleSystem:
			if msg.Content != "" {
				p.System = append(p.System, sdk.TextBlockParam{Text: msg.Content})
			}
		case llm.RoleUser:
			blocks, err := userBlocks(msg)
			if err != nil {
				return p, fmt.Errorf("message %d: %w", i, err)
			}
			add(false, blocks...)
		case llm.RoleAssistant:
			var blocks []sdk.ContentBlockParamUnion
			if msg.Content != "" { // the API refuses empty text blocks
				blocks = append(blocks, sdk.NewTextBlock(msg.Content))
			}
			for _, c := range msg.ToolCalls {
				args := bytes.TrimSpace(c.Arguments)
				if len(args) == 0 {
					args = []byte("{}")
				}
				if !json.Valid(args) {
					return p, fmt.Errorf("message %d: tool call %s: arguments are not JSON", i, c.ID)
				}
				blocks = append(blocks, sdk.NewToolUseBlock(c.ID, json.RawMessage(args), c.Name))
			}
			add(true, blocks...)
		case llm.RoleTool:
			add(false, sdk.NewToolResultBlock(msg.ToolCallID, msg.Content, false))
		default:
			return p, fmt.Errorf("message %d: unknown role %q", i, msg.Role)
		}
	}
	for _, t := range turns {
		if t.assistant {
			p.Messages = append(p.Messages, sdk.NewAssistantMessage(t.blocks...))
		} else {
			p.Messages = append(p.Messages, sdk.NewUserMessage(t.blocks...))
		}
	}
	for _, t := range req.Tools {
		schema, err := inputSchema(t.Parameters)
		if err != nil {
			return p, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		tool := sdk.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tool.Description = param.NewOpt(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &tool})
	}
	if req.JSONObject {
		// The Messages API has no JSON-object mode; asking is what works.
		p.System = append(p.System, sdk.TextBlockParam{Text: "Answer with a single JSON object and nothing else."})
	}
	return p, nil
}

func userBlocks(msg llm.Message) ([]sdk.ContentBlockParamUnion, error) {
	if len(msg.Parts) == 0 {
		if msg.Content == "" {
			return nil, nil
		}
		return []sdk.ContentBlockParamUnion{sdk.NewTextBlock(msg.Content)}, nil
	}
	var blocks []sdk.ContentBlockParamUnion
	for _, part := range msg.Parts {
		switch part.Type {
		case "text":
			if part.Text != "" {
				blocks = append(blocks, sdk.NewTextBlock(part.Text))
			}
		case "image_url":
			blocks = append(blocks, sdk.NewImageBlock(sdk.URLImageSourceParam{URL: part.ImageURL}))
		default:
			return nil, fmt.Errorf("unknown part type %q", part.Type)
		}
	}
	return blocks, nil
}

// inputSchema turns a tool's JSON Schema into the SDK's input_schema,
// keeping every keyword beyond properties and required as an extra field.
func inputSchema(raw json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	var s sdk.ToolInputSchemaParam
	if len(bytes.TrimSpace(raw)) == 0 {
		s.Properties = map[string]any{}
		return s, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return s, fmt.Errorf("parameters are not a JSON object: %w", err)
	}
	s.Properties = cmp.Or[any](m["properties"], map[string]any{})
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				s.Required = append(s.Required, name)
			}
		}
	}
	for k, v := range m {
		if k == "type" || k == "properties" || k == "required" {
			continue
		}
		if s.ExtraFields == nil {
			s.ExtraFields = map[string]any{}
		}
		s.ExtraFields[k] = v
	}
	return s, nil
}

// stream decodes a Messages event stream into llm chunks.
type stream struct {
	ctx      context.Context // the caller's: tells cancellation from failure
	cancel   func()
	provider upstream.Provider
	resp     *http.Response
	events   *sse.Reader
	dec      eventDecoder
	ev       event // the last decoded

	queue   []llm.Chunk // converted from the current event; reused
	queued  int         // how many of queue were delivered
	cur     llm.Chunk
	tools   map[int64]int // content block index → tool call index
	usage   llm.Usage
	hasUse  bool
	stopped bool // message_stop arrived
	ended   bool
	err     error
	closed  bool
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
		if s.stopped {
			// message_stop is the end: stop reading rather than wait for
			// the server to close the body.
			s.end(nil)
			continue
		}
		typ, data, err := s.events.Next()
		switch {
		case errors.Is(err, io.EOF):
			s.end(nil)
		case err != nil:
			s.end(err)
		// The SDK's rules: events without a name, pings and events
		// without data are skipped; an error event ends the stream.
		case len(typ) == 0, string(typ) == "ping", len(bytes.TrimSuffix(data, []byte("\n"))) == 0:
		case string(typ) == "error":
			s.end(s.eventError(bytes.TrimSuffix(data, []byte("\n"))))
		default:
			if err := s.dec.decode(data, &s.ev); err != nil {
				s.end(err)
			} else {
				s.convert(&s.ev)
			}
		}
	}
}

// eventError is the error of an error event, as the SDK makes it: an
// *sdk.Error when the event is JSON.
func (s *stream) eventError(data []byte) error {
	e := &sdk.Error{
		StatusCode:  s.resp.StatusCode,
		Request:     s.resp.Request,
		Response:    s.resp,
		RequestID:   s.resp.Header.Get("request-id"),
		WorkspaceID: s.resp.Header.Get("anthropic-workspace-id"),
	}
	if e.UnmarshalJSON(data) != nil {
		return fmt.Errorf("received error while streaming: %s", data)
	}
	return e
}

func (s *stream) convert(ev *event) {
	switch ev.typ {
	case "message_start":
		u := ev.messageUsage
		s.usage.InputTokens = int(u.input())
		s.usage.OutputTokens = int(u.outputTokens)
		s.hasUse = true
	case "content_block_start":
		b := &ev.block
		switch b.typ {
		case "tool_use":
			if s.tools == nil {
				s.tools = map[int64]int{}
			}
			i := len(s.tools)
			s.tools[ev.index] = i
			s.queue = append(s.queue, llm.Chunk{ToolCall: &llm.ToolCallDelta{Index: i, ID: b.id, Name: b.name}})
		case "text":
			if b.text != "" {
				s.queue = append(s.queue, llm.Chunk{Text: b.text})
			}
		case "thinking":
			if b.thinking != "" {
				s.queue = append(s.queue, llm.Chunk{Reasoning: b.thinking})
			}
		}
	case "content_block_delta":
		d := &ev.delta
		switch d.typ {
		case "text_delta":
			if d.text != "" {
				s.queue = append(s.queue, llm.Chunk{Text: d.text})
			}
		case "thinking_delta":
			if d.thinking != "" {
				s.queue = append(s.queue, llm.Chunk{Reasoning: d.thinking})
			}
		case "input_json_delta":
			if i, ok := s.tools[ev.index]; ok && d.partialJSON != "" {
				s.queue = append(s.queue, llm.Chunk{ToolCall: &llm.ToolCallDelta{Index: i, ArgsDelta: d.partialJSON}})
			}
		}
	case "message_delta":
		if r := finishReason(ev.delta.stopReason); r != "" {
			s.queue = append(s.queue, llm.Chunk{FinishReason: r})
		}
		// message_delta's usage is cumulative: it replaces message_start's
		// output count, and repeats the input count when it has one.
		s.usage.OutputTokens = int(ev.usage.outputTokens)
		if in := ev.usage.input(); in > 0 {
			s.usage.InputTokens = int(in)
		}
		s.usage.ReasoningTokens = int(ev.usage.thinkingTokens)
		s.hasUse = true
	case "message_stop":
		s.stopped = true
	}
}

func finishReason(stop string) string {
	switch stop {
	case "":
		return ""
	case "end_turn", "stop_sequence", "pause_turn":
		return "stop"
	case "tool_use":
		return "tool_calls"
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "refusal":
		return "content_filter"
	}
	return stop
}

// end settles how the stream ended: with message_stop (then usage is the
// last chunk), or with the error to report.
func (s *stream) end(err error) {
	s.ended = true
	defer s.release()
	if s.stopped && s.ctx.Err() == nil {
		if s.hasUse {
			u := s.usage
			s.queue = append(s.queue, llm.Chunk{Usage: &u})
		}
		return
	}
	if cerr := s.provider.ContextError(s.ctx, err); cerr != nil {
		s.err = cerr
		return
	}
	var apiErr *sdk.Error
	var decErr *jsonscan.Error
	switch {
	case errors.As(err, &apiErr):
		s.err = s.inStreamError(apiErr)
	case err != nil && strings.HasPrefix(err.Error(), "received error while streaming"):
		// An error event the SDK could not decode.
		s.err = &llm.Error{Code: llm.CodeUnknown, Message: "the model provider failed mid-answer", Err: s.provider.Cause(err)}
	case errors.As(err, &decErr), errors.Is(err, sse.ErrTooLarge):
		s.err = s.provider.BadStream(err)
	default:
		s.err = s.provider.StreamCut(err)
	}
}

// inStreamError maps an error event sent after the stream began, such as
// {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}.
func (s *stream) inStreamError(e *sdk.Error) *llm.Error {
	code := llm.CodeUnknown
	switch e.Type() {
	case "overloaded_error", "api_error":
		code = llm.CodeUnavailable
	case "rate_limit_error":
		code = llm.CodeRateLimited
	case "authentication_error", "permission_error":
		code = llm.CodeUnauthorized
	case "invalid_request_error", "not_found_error", "request_too_large":
		code = llm.CodeBadRequest
	}
	return &llm.Error{
		Code:    code,
		Message: "the model provider (" + s.provider.Host + ") failed mid-answer: " + s.provider.Scrub(cmp.Or(e.Message, string(e.Type()), "no message")),
		Err:     s.provider.Cause(e),
	}
}

func (s *stream) Chunk() llm.Chunk { return s.cur }

func (s *stream) Err() error { return s.err }

func (s *stream) Close() error {
	s.release()
	return nil
}

func (s *stream) release() {
	if s.closed {
		return
	}
	s.closed = true
	s.resp.Body.Close()
	s.cancel()
}
