package fakeupstream

import (
	"cmp"
	"net/http"
	"strings"
)

// anthropicWire is the Messages streaming format: named events
// message_start, content_block_start/delta/stop per block, message_delta,
// message_stop, with ping and error events between them.
type anthropicWire struct{}

func (anthropicWire) accepts(r *http.Request) bool {
	return strings.HasSuffix(r.URL.Path, "/v1/messages")
}

type anBlock struct {
	Type     string          `json:"type"`
	Text     *string         `json:"text,omitempty"`
	Thinking *string         `json:"thinking,omitempty"`
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name,omitempty"`
	Input    *map[string]any `json:"input,omitempty"`
}

type anDelta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	Thinking    *string `json:"thinking,omitempty"`
	Signature   *string `json:"signature,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
}

func (anthropicWire) frames(rep Reply, req Request) (content, end [][]byte) {
	model, _ := req.Body["model"].(string)
	u := usageOf(rep)
	ev := func(name string, data map[string]any) []byte {
		data["type"] = name
		return sse(name, mustJSON(data))
	}
	content = append(content, ev("message_start", map[string]any{"message": map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "content": []any{},
		"model": model, "stop_reason": nil, "stop_sequence": nil,
		// Anthropic counts the prompt cache's tokens apart from input_tokens.
		"usage": map[string]any{"input_tokens": u.InputTokens - u.CachedInputTokens, "cache_read_input_tokens": u.CachedInputTokens, "output_tokens": 1},
	}}))
	content = append(content, sse("ping", []byte(`{"type": "ping"}`)))

	index := 0
	block := func(start anBlock, deltas []anDelta) {
		content = append(content, ev("content_block_start", map[string]any{"index": index, "content_block": start}))
		for _, d := range deltas {
			content = append(content, ev("content_block_delta", map[string]any{"index": index, "delta": d}))
		}
		content = append(content, ev("content_block_stop", map[string]any{"index": index}))
		index++
	}
	empty := ""
	if len(rep.Reasoning) > 0 {
		var ds []anDelta
		for _, r := range rep.Reasoning {
			ds = append(ds, anDelta{Type: "thinking_delta", Thinking: &r})
		}
		sig := "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
		ds = append(ds, anDelta{Type: "signature_delta", Signature: &sig})
		block(anBlock{Type: "thinking", Thinking: &empty}, ds)
	}
	if len(rep.Text) > 0 {
		var ds []anDelta
		for _, t := range rep.Text {
			ds = append(ds, anDelta{Type: "text_delta", Text: &t})
		}
		block(anBlock{Type: "text", Text: &empty}, ds)
	}
	for _, c := range rep.ToolCalls {
		ds := []anDelta{{Type: "input_json_delta", PartialJSON: &empty}}
		for _, a := range c.Args {
			ds = append(ds, anDelta{Type: "input_json_delta", PartialJSON: &a})
		}
		block(anBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: &map[string]any{}}, ds)
	}

	stop := map[string]string{
		"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens", "content_filter": "refusal",
	}[finishOf(rep)]
	end = append(end, ev("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": cmp.Or(stop, finishOf(rep)), "stop_sequence": nil},
		"usage": map[string]any{
			"output_tokens":         u.OutputTokens,
			"output_tokens_details": map[string]any{"thinking_tokens": u.ReasoningTokens},
		},
	}))
	end = append(end, ev("message_stop", map[string]any{}))
	return content, end
}

func (anthropicWire) malformed() []byte {
	return sse("content_block_delta", []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"trunc`))
}

func (anthropicWire) errorEvent(rep Reply) []byte {
	return sse("error", mustJSON(map[string]any{"type": "error", "error": map[string]any{
		"type":    cmp.Or(rep.ErrorType, "overloaded_error"),
		"message": cmp.Or(rep.ErrorMessage, "Overloaded"),
	}}))
}

func (anthropicWire) errorBody(rep Reply, key string) (int, []byte) {
	status := cmp.Or(rep.Status, http.StatusInternalServerError)
	typ, msg := "invalid_request_error", "Invalid request."
	switch {
	case status == http.StatusUnauthorized:
		typ, msg = "authentication_error", "invalid x-api-key: "+key
	case status == http.StatusForbidden:
		typ, msg = "permission_error", "Your API key "+key+" does not have permission to use the specified resource."
	case status == http.StatusTooManyRequests:
		typ, msg = "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."
	case status == http.StatusNotFound:
		typ, msg = "not_found_error", "model: not found"
	case status == 529:
		typ, msg = "overloaded_error", "Overloaded"
	case status >= 500:
		typ, msg = "api_error", "Internal server error"
	}
	return status, mustJSON(map[string]any{"type": "error", "error": map[string]any{
		"type":    cmp.Or(rep.ErrorType, typ),
		"message": cmp.Or(rep.ErrorMessage, msg),
	}, "request_id": "req_fake"})
}
