package fakeupstream

import (
	"cmp"
	"net/http"
	"strings"
)

// openaiWire is the Chat Completions streaming format: one
// chat.completion.chunk JSON object per data line, then data: [DONE].
type openaiWire struct{}

func (openaiWire) accepts(r *http.Request) bool {
	return strings.HasSuffix(r.URL.Path, "/chat/completions")
}

type oaChunk struct {
	ID      string     `json:"id"`
	Object  string     `json:"object"`
	Created int64      `json:"created"`
	Model   string     `json:"model"`
	Choices []oaChoice `json:"choices"`
	Usage   *oaUsage   `json:"usage,omitempty"`
}

type oaChoice struct {
	Index        int     `json:"index"`
	Delta        oaDelta `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type oaDelta struct {
	Role             string       `json:"role,omitempty"`
	Content          *string      `json:"content,omitempty"`
	ReasoningContent *string      `json:"reasoning_content,omitempty"`
	ToolCalls        []oaToolCall `json:"tool_calls,omitempty"`
}

type oaToolCall struct {
	Index    int        `json:"index"`
	ID       string     `json:"id,omitempty"`
	Type     string     `json:"type,omitempty"`
	Function oaFunction `json:"function"`
}

type oaFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type oaUsage struct {
	PromptTokens            int `json:"prompt_tokens"`
	CompletionTokens        int `json:"completion_tokens"`
	TotalTokens             int `json:"total_tokens"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details,omitempty"`
}

func (openaiWire) frames(rep Reply, req Request) (content, end [][]byte) {
	model, _ := req.Body["model"].(string)
	chunk := func(d oaDelta, finish *string) []byte {
		return sse("", mustJSON(oaChunk{
			ID: "chatcmpl-fake", Object: "chat.completion.chunk", Created: 1700000000,
			Model: model, Choices: []oaChoice{{Delta: d, FinishReason: finish}},
		}))
	}
	empty := ""
	content = append(content, chunk(oaDelta{Role: "assistant", Content: &empty}, nil))
	for _, r := range rep.Reasoning {
		content = append(content, chunk(oaDelta{ReasoningContent: &r}, nil))
	}
	for _, t := range rep.Text {
		content = append(content, chunk(oaDelta{Content: &t}, nil))
	}
	for i, c := range rep.ToolCalls {
		content = append(content, chunk(oaDelta{ToolCalls: []oaToolCall{{
			Index: i, ID: c.ID, Type: "function", Function: oaFunction{Name: c.Name},
		}}}, nil))
		for _, a := range c.Args {
			content = append(content, chunk(oaDelta{ToolCalls: []oaToolCall{{
				Index: i, Function: oaFunction{Arguments: a},
			}}}, nil))
		}
	}
	finish := finishOf(rep)
	end = append(end, chunk(oaDelta{}, &finish))
	if opts, _ := req.Body["stream_options"].(map[string]any); opts["include_usage"] == true {
		u := usageOf(rep)
		ou := &oaUsage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}
		ou.CompletionTokensDetails.ReasoningTokens = u.ReasoningTokens
		if u.CachedInputTokens > 0 {
			ou.PromptTokensDetails = &struct {
				CachedTokens int `json:"cached_tokens"`
			}{u.CachedInputTokens}
		}
		end = append(end, sse("", mustJSON(oaChunk{
			ID: "chatcmpl-fake", Object: "chat.completion.chunk", Created: 1700000000,
			Model: model, Choices: []oaChoice{}, Usage: ou,
		})))
	}
	end = append(end, sse("", []byte("[DONE]")))
	return content, end
}

func (openaiWire) malformed() []byte {
	return sse("", []byte(`{"id":"chatcmpl-fake","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"trunc`))
}

type oaError struct {
	Error oaErrorBody `json:"error"`
}

type oaErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Code    *string `json:"code"`
}

func (openaiWire) errorEvent(rep Reply) []byte {
	return sse("", mustJSON(oaError{Error: oaErrorBody{
		Message: cmp.Or(rep.ErrorMessage, "The server had an error while processing your request."),
		Type:    cmp.Or(rep.ErrorType, "server_error"),
	}}))
}

func (openaiWire) errorBody(rep Reply, key string) (int, []byte) {
	status := cmp.Or(rep.Status, http.StatusInternalServerError)
	typ, code, msg := "invalid_request_error", "", "Invalid request."
	switch {
	case status == http.StatusUnauthorized:
		code, msg = "invalid_api_key", "Incorrect API key provided: "+key+". You can find your API key at https://platform.openai.com/account/api-keys."
	case status == http.StatusForbidden:
		typ, code, msg = "permission_error", "unsupported_country_region_territory", "Country, region, or territory not supported for key "+key+"."
	case status == http.StatusTooManyRequests:
		typ, code, msg = "requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again shortly."
	case status == http.StatusNotFound:
		code, msg = "model_not_found", "The model does not exist or you do not have access to it."
	case status >= 500:
		typ, msg = "server_error", "The server had an error while processing your request. Sorry about that!"
	}
	e := oaErrorBody{Message: cmp.Or(rep.ErrorMessage, msg), Type: cmp.Or(rep.ErrorType, typ)}
	if c := cmp.Or(rep.ErrorCode, code); c != "" {
		e.Code = &c
	}
	return status, mustJSON(oaError{Error: e})
}
