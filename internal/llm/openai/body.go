package openai

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/agentchat/agentchat/internal/jsonstr"
	"github.com/agentchat/agentchat/internal/llm"
)

// body is req's Chat Completions request, written by hand: the SDK's
// params encode by reflection, every message and every param on every
// call, which cost CPU and stack on the run's goroutine before its first
// token (docs/benchmarks.md, issue 25's fifth round). The SDK still sends
// it. TestRequestBody holds it to the SDK's own encoding of the same
// request.
func (m *Model) body(req llm.Request) ([]byte, error) {
	n := 160
	for _, msg := range req.Messages {
		n += 48 + len(msg.Content)
	}
	for _, t := range req.Tools {
		n += 64 + len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"model":`...)
	b = jsonstr.Append(b, cmp.Or(req.Model, m.cfg.Model))
	b = append(b, `,"stream":true,"stream_options":{"include_usage":true},"messages":`...)
	b, err := appendArray(b, req.Messages, appendMessage)
	if err != nil {
		return nil, fmt.Errorf("message %w", err)
	}
	if len(req.Tools) > 0 {
		b = append(b, `,"tools":`...)
		if b, err = appendArray(b, req.Tools, appendTool); err != nil {
			return nil, fmt.Errorf("tool %w", err)
		}
	}
	if req.MaxTokens > 0 {
		if m.maxCompletionTokens {
			b = append(b, `,"max_completion_tokens":`...)
		} else {
			b = append(b, `,"max_tokens":`...)
		}
		b = strconv.AppendInt(b, int64(req.MaxTokens), 10)
	}
	if t := req.Temperature; t != nil {
		if math.IsNaN(*t) || math.IsInf(*t, 0) {
			return nil, fmt.Errorf("temperature %v is not a number JSON can carry", *t)
		}
		b = append(b, `,"temperature":`...)
		b = appendFloat(b, *t)
	}
	if req.JSONObject {
		b = append(b, `,"response_format":{"type":"json_object"}`...)
	}
	return append(b, '}'), nil
}

// appendArray appends items as a JSON array, each written by appendItem;
// an item's error names its index.
func appendArray[T any](b []byte, items []T, appendItem func([]byte, T) ([]byte, error)) ([]byte, error) {
	b = append(b, '[')
	for i, item := range items {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendItem(b, item); err != nil {
			return b, fmt.Errorf("%d: %w", i, err)
		}
	}
	return append(b, ']'), nil
}

// appendTool appends t as a request's function tool. The schema goes out as
// the agent's definition wrote it, key order included; a missing one is
// the empty object schema.
func appendTool(b []byte, t llm.ToolSpec) ([]byte, error) {
	params := bytes.TrimSpace(t.Parameters)
	if len(params) == 0 || string(params) == "null" {
		params = []byte(`{"type":"object","properties":{}}`)
	} else if params[0] != '{' || !json.Valid(params) {
		return b, fmt.Errorf("%s: parameters are not a JSON object", t.Name)
	}
	b = append(b, `{"type":"function","function":{"name":`...)
	b = jsonstr.Append(b, t.Name)
	if t.Description != "" {
		b = append(b, `,"description":`...)
		b = jsonstr.Append(b, t.Description)
	}
	b = append(b, `,"parameters":`...)
	b = append(b, params...)
	return append(b, "}}"...), nil
}

// appendMessage appends msg as a request message.
func appendMessage(b []byte, msg llm.Message) ([]byte, error) {
	switch msg.Role {
	case llm.RoleSystem:
		b = append(b, `{"role":"system","content":`...)
		b = jsonstr.Append(b, msg.Content)
	case llm.RoleUser:
		b = append(b, `{"role":"user","content":`...)
		if len(msg.Parts) == 0 {
			b = jsonstr.Append(b, msg.Content)
			break
		}
		var err error
		if b, err = appendArray(b, msg.Parts, appendPart); err != nil {
			return b, fmt.Errorf("part %w", err)
		}
	case llm.RoleAssistant:
		b = append(b, `{"role":"assistant"`...)
		if msg.Content != "" || len(msg.ToolCalls) == 0 {
			b = append(b, `,"content":`...)
			b = jsonstr.Append(b, msg.Content)
		}
		if len(msg.ToolCalls) > 0 {
			b = append(b, `,"tool_calls":[`...)
			for i, c := range msg.ToolCalls {
				if i > 0 {
					b = append(b, ',')
				}
				args := string(c.Arguments)
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				b = append(b, `{"id":`...)
				b = jsonstr.Append(b, c.ID)
				b = append(b, `,"type":"function","function":{"name":`...)
				b = jsonstr.Append(b, c.Name)
				b = append(b, `,"arguments":`...)
				b = jsonstr.Append(b, args)
				b = append(b, "}}"...)
			}
			b = append(b, ']')
		}
	case llm.RoleTool:
		b = append(b, `{"role":"tool","tool_call_id":`...)
		b = jsonstr.Append(b, msg.ToolCallID)
		b = append(b, `,"content":`...)
		b = jsonstr.Append(b, msg.Content)
	default:
		return b, fmt.Errorf("unknown role %q", msg.Role)
	}
	return append(b, '}'), nil
}

// appendPart appends a user message's part as a content part.
func appendPart(b []byte, part llm.Part) ([]byte, error) {
	switch part.Type {
	case llm.PartText:
		b = append(b, `{"type":"text","text":`...)
		b = jsonstr.Append(b, part.Text)
	case llm.PartImageURL:
		b = append(b, `{"type":"image_url","image_url":{"url":`...)
		b = jsonstr.Append(b, part.ImageURL)
		b = append(b, '}')
	case llm.PartImage:
		b = append(b, `{"type":"image_url","image_url":{"url":`...)
		b = jsonstr.Append(b, dataURL(part))
		b = append(b, '}')
	case llm.PartDocument:
		if format := audioFormat(part.MediaType); format != "" {
			// Audio a models file says the model accepts: the API's
			// input_audio part (wav and mp3 are its formats).
			b = append(b, `{"type":"input_audio","input_audio":{"data":"`...)
			b = base64.StdEncoding.AppendEncode(b, part.Data)
			b = append(b, `","format":"`...)
			b = append(b, format...)
			b = append(b, `"}`...)
			break
		}
		b = append(b, `{"type":"file","file":{"file_data":`...)
		b = jsonstr.Append(b, dataURL(part))
		b = append(b, `,"filename":`...)
		b = jsonstr.Append(b, cmp.Or(part.Name, "document.pdf"))
		b = append(b, '}')
	default:
		return b, fmt.Errorf("unknown part type %q", part.Type)
	}
	return append(b, '}'), nil
}

// appendFloat appends f as encoding/json writes a float64.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(b, f, format, -1, 64)
}
