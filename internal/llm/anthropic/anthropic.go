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
// refused call to its error. The stream is read by the loop the adapters
// share (internal/llm/internal/stream: transport, queueing, cancellation,
// errors); this package supplies only its decode step, which reads the
// events into only the fields above and without reflection (see the openai
// adapter). Errors are *llm.Error, except a cancelled ctx, which is
// reported as the context's error. Their texts never contain the API key.
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
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/internal/stream"
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
		return nil, stream.InvalidRequest(err)
	}
	// WithResponseBodyInto hands the loop the response with its body
	// unread (the SDK's stream is left without a decoder), so the events
	// are decoded here, without the SDK's reflective decoder on the path of
	// every token.
	send := func(ctx context.Context) (resp *http.Response, err error) {
		err = m.messages.NewStreaming(ctx, params, option.WithResponseBodyInto(&resp)).Err()
		return resp, err
	}
	return stream.Open(ctx, stream.Upstream{Provider: m.provider, Timeout: m.cfg.Timeout}, send,
		func(d *decoder, resp *http.Response) { d.provider, d.resp = m.provider, resp })
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
		case llm.PartImage:
			blocks = append(blocks, sdk.NewImageBlockBase64(part.MediaType, base64.StdEncoding.EncodeToString(part.Data)))
		case llm.PartDocument:
			if part.MediaType != "" && part.MediaType != "application/pdf" {
				// A type a models file says the model accepts: Anthropic's
				// API takes images, PDFs and text, nothing else.
				return nil, fmt.Errorf("the Anthropic API takes no %s files (%s)", part.MediaType, part.Name)
			}
			doc := sdk.NewDocumentBlock(sdk.Base64PDFSourceParam{Data: base64.StdEncoding.EncodeToString(part.Data)})
			if part.Name != "" {
				doc.OfDocument.Title = param.NewOpt(part.Name)
			}
			blocks = append(blocks, doc)
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

// decoder is the adapter's decode step (see package stream): it turns
// Messages stream events into llm chunks.
type decoder struct {
	provider upstream.Provider
	resp     *http.Response // for the errors the stream reports
	dec      eventDecoder
	ev       event         // the last decoded
	tools    map[int64]int // content block index → tool call index
	usage    llm.Usage
	hasUse   bool
	stopped  bool // message_stop arrived
}

func (d *decoder) Event(typ, data []byte, q []llm.Chunk) ([]llm.Chunk, bool, error) {
	data = bytes.TrimSuffix(data, []byte("\n"))
	switch {
	// The SDK's rules: events without a name, pings and events without
	// data are skipped; an error event ends the stream.
	case len(typ) == 0, string(typ) == "ping", len(data) == 0:
		return q, false, nil
	case string(typ) == "error":
		return q, false, d.eventError(data)
	}
	if err := d.dec.decode(data, &d.ev); err != nil {
		return q, false, err
	}
	q = d.convert(&d.ev, q)
	// message_stop is the end: stop reading rather than wait for the
	// server to close the body.
	return q, d.stopped, nil
}

// End: the answer is complete only with message_stop; then the usage, if
// any, is its last chunk.
func (d *decoder) End(q []llm.Chunk, _ bool) ([]llm.Chunk, bool) {
	if !d.stopped {
		return q, false
	}
	if d.hasUse {
		u := d.usage
		q = append(q, llm.Chunk{Usage: &u})
	}
	return q, true
}

// eventError maps an error event, decoded as the SDK decodes it: an
// *sdk.Error when the event is JSON, such as
// {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}.
func (d *decoder) eventError(data []byte) *llm.Error {
	e := &sdk.Error{
		StatusCode:  d.resp.StatusCode,
		Request:     d.resp.Request,
		Response:    d.resp,
		RequestID:   d.resp.Header.Get("request-id"),
		WorkspaceID: d.resp.Header.Get("anthropic-workspace-id"),
	}
	if e.UnmarshalJSON(data) != nil {
		return &llm.Error{
			Code:    llm.CodeUnknown,
			Message: "the model provider failed mid-answer",
			Err:     d.provider.Cause(&undecodedError{data: bytes.Clone(data)}),
		}
	}
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
		Message: "the model provider (" + d.provider.Host + ") failed mid-answer: " + d.provider.Scrub(cmp.Or(e.Message, string(e.Type()), "no message")),
		Err:     d.provider.Cause(e),
	}
}

// undecodedError is the cause of an error event that is not the JSON the
// SDK reads: the event as it came.
type undecodedError struct{ data []byte }

func (e *undecodedError) Error() string {
	return fmt.Sprintf("received error while streaming: %s", e.data)
}

// convert appends the llm chunks of one decoded event to q.
func (d *decoder) convert(ev *event, q []llm.Chunk) []llm.Chunk {
	switch ev.typ {
	case "message_start":
		u := ev.messageUsage
		d.usage.InputTokens = int(u.input())
		d.usage.OutputTokens = int(u.outputTokens)
		d.usage.CachedInputTokens = int(u.cacheReadInputTokens)
		d.hasUse = true
	case "content_block_start":
		b := &ev.block
		switch b.typ {
		case "tool_use":
			if d.tools == nil {
				d.tools = map[int64]int{}
			}
			i := len(d.tools)
			d.tools[ev.index] = i
			q = append(q, llm.Chunk{ToolCall: &llm.ToolCallDelta{Index: i, ID: b.id, Name: b.name}})
		case "text":
			if b.text != "" {
				q = append(q, llm.Chunk{Text: b.text})
			}
		case "thinking":
			if b.thinking != "" {
				q = append(q, llm.Chunk{Reasoning: b.thinking})
			}
		}
	case "content_block_delta":
		dl := &ev.delta
		switch dl.typ {
		case "text_delta":
			if dl.text != "" {
				q = append(q, llm.Chunk{Text: dl.text})
			}
		case "thinking_delta":
			if dl.thinking != "" {
				q = append(q, llm.Chunk{Reasoning: dl.thinking})
			}
		case "input_json_delta":
			if i, ok := d.tools[ev.index]; ok && dl.partialJSON != "" {
				q = append(q, llm.Chunk{ToolCall: &llm.ToolCallDelta{Index: i, ArgsDelta: dl.partialJSON}})
			}
		}
	case "message_delta":
		if r := finishReason(ev.delta.stopReason); r != "" {
			q = append(q, llm.Chunk{FinishReason: r})
		}
		// message_delta's usage is cumulative: it replaces message_start's
		// output count, and repeats the input count when it has one.
		d.usage.OutputTokens = int(ev.usage.outputTokens)
		if in := ev.usage.input(); in > 0 {
			d.usage.InputTokens = int(in)
			d.usage.CachedInputTokens = int(ev.usage.cacheReadInputTokens)
		}
		d.usage.ReasoningTokens = int(ev.usage.thinkingTokens)
		d.hasUse = true
	case "message_stop":
		d.stopped = true
	}
	return q
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
