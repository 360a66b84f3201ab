package openai

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentchat/agentchat/internal/llm"
)

// TestRequestBody: the body written by hand is, as JSON, what the SDK's own
// encoding of the same request (its params, and the "stream" it adds) is,
// for every role, part and param.
func TestRequestBody(t *testing.T) {
	t.Parallel()
	temp, zero, tiny := 0.2, 0.0, 1e-7
	for _, tc := range []struct {
		name                string
		maxCompletionTokens bool
		req                 llm.Request
	}{
		{"short chat", false, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}},
		{"every role", false, llm.Request{Model: "deepseek-chat", Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "Be brief. <b>\"quoted\"</b>\n\u2028"},
			{Role: llm.RoleUser, Content: "What is 2+2?"},
			{Role: llm.RoleAssistant, Content: "Let me check.", ToolCalls: []llm.ToolCall{
				{ID: "call_1", Name: "calc", Arguments: json.RawMessage(`{"expr":"2+2"}`)},
				{ID: "call_2", Name: "ping", Arguments: json.RawMessage(" ")},
			}},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_3", Name: "ping"}}},
			{Role: llm.RoleTool, ToolCallID: "call_1", Name: "calc", Content: "4"},
			{Role: llm.RoleTool, ToolCallID: "call_2", Content: ""},
			{Role: llm.RoleAssistant},
			{Role: llm.RoleUser},
		}}},
		{"every part", false, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{
			{Type: llm.PartText, Text: "What is this?"},
			{Type: llm.PartImageURL, ImageURL: "https://example.com/cat.png?a=1&b=2"},
			{Type: llm.PartImage, MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
			{Type: llm.PartDocument, Name: "report.pdf", MediaType: "application/pdf", Data: []byte("%PDF-1.7")},
			{Type: llm.PartDocument, MediaType: "application/pdf", Data: []byte("%PDF")},
			{Type: llm.PartDocument, Name: "a.wav", MediaType: "audio/wav", Data: []byte("RIFF")},
			{Type: llm.PartDocument, Name: "a.mp3", MediaType: "audio/mpeg", Data: []byte("ID3")},
		}}}}},
		{"params", false, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}},
			MaxTokens: 50, Temperature: &temp, JSONObject: true}},
		{"max_completion_tokens", true, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}},
			MaxTokens: 7, Temperature: &zero}},
		{"a tiny temperature", false, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, Temperature: &tiny}},
		{"tools", false, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, Tools: []llm.ToolSpec{
			{Name: "lookup", Description: "Looks <things> up.", Parameters: json.RawMessage(` {"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)},
			{Name: "ping"},
			{Name: "nothing", Parameters: json.RawMessage(`null`)},
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := &Model{cfg: Config{Model: "gpt-test"}, maxCompletionTokens: tc.maxCompletionTokens}
			got, err := m.body(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			sdkBody, err := json.Marshal(sdkParams(t, m, tc.req))
			if err != nil {
				t.Fatal(err)
			}
			var gotJSON, want map[string]any
			if err := json.Unmarshal(got, &gotJSON); err != nil {
				t.Fatalf("%v in %s", err, got)
			}
			if err := json.Unmarshal(sdkBody, &want); err != nil {
				t.Fatal(err)
			}
			want["stream"] = true // NewStreaming's
			if !reflect.DeepEqual(gotJSON, want) {
				t.Errorf("body =\n%s\nthe SDK's\n%s", got, sdkBody)
			}
		})
	}
}

// sdkParams is req as the SDK's params, the adapter's translation before
// the body was written by hand: TestRequestBody's reference.
func sdkParams(t *testing.T, m *Model, req llm.Request) sdk.ChatCompletionNewParams {
	p := sdk.ChatCompletionNewParams{
		Model:         shared.ChatModel(cmp.Or(req.Model, m.cfg.Model)),
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)},
	}
	for _, msg := range req.Messages {
		p.Messages = append(p.Messages, sdkMessage(t, msg))
	}
	for _, tool := range req.Tools {
		var params map[string]any
		if err := json.Unmarshal(tool.Parameters, &params); err != nil || params == nil {
			params = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		f := shared.FunctionDefinitionParam{Name: tool.Name, Parameters: params}
		if tool.Description != "" {
			f.Description = sdk.String(tool.Description)
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(f))
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
	return p
}

func sdkMessage(t *testing.T, msg llm.Message) sdk.ChatCompletionMessageParamUnion {
	switch msg.Role {
	case llm.RoleSystem:
		return sdk.SystemMessage(msg.Content)
	case llm.RoleUser:
		if len(msg.Parts) == 0 {
			return sdk.UserMessage(msg.Content)
		}
		var parts []sdk.ChatCompletionContentPartUnionParam
		for _, part := range msg.Parts {
			switch part.Type {
			case llm.PartText:
				parts = append(parts, sdk.TextContentPart(part.Text))
			case llm.PartImageURL:
				parts = append(parts, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: part.ImageURL}))
			case llm.PartImage:
				parts = append(parts, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: dataURL(part)}))
			case llm.PartDocument:
				if format := audioFormat(part.MediaType); format != "" {
					parts = append(parts, sdk.InputAudioContentPart(sdk.ChatCompletionContentPartInputAudioInputAudioParam{
						Data: base64.StdEncoding.EncodeToString(part.Data), Format: format}))
					continue
				}
				f := sdk.ChatCompletionContentPartFileFileParam{FileData: sdk.String(dataURL(part))}
				f.Filename = sdk.String(cmp.Or(part.Name, "document.pdf"))
				parts = append(parts, sdk.FileContentPart(f))
			default:
				t.Fatalf("part type %q", part.Type)
			}
		}
		return sdk.UserMessage(parts)
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
		return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}
	case llm.RoleTool:
		return sdk.ToolMessage(msg.Content, msg.ToolCallID)
	}
	t.Fatalf("role %q", msg.Role)
	return sdk.ChatCompletionMessageParamUnion{}
}
