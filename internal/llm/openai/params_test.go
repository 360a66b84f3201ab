package openai

import (
	"encoding/json"
	"testing"

	"github.com/agentchat/agentchat/internal/llm"
)

// BenchmarkRequestBody measures what every model call costs before it is
// sent: translating a request with a few tools and encoding its body.
func BenchmarkRequestBody(b *testing.B) {
	m, err := newModel(Config{BaseURL: "http://127.0.0.1:1/v1", Model: "gpt-test"})
	if err != nil {
		b.Fatal(err)
	}
	req := llm.Request{
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: "Be brief."}, {Role: llm.RoleUser, Content: "What time is it in Paris?"}},
		Tools: []llm.ToolSpec{
			{Name: "current_time", Description: "The current time in a time zone.", Parameters: json.RawMessage(`{"type":"object","properties":{"timezone":{"type":"string","description":"An IANA time zone, e.g. Europe/Paris."}},"required":["timezone"]}`)},
			{Name: "calculator", Description: "Evaluates an arithmetic expression.", Parameters: json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string"},"precision":{"type":"integer","minimum":0,"maximum":20}},"required":["expression"]}`)},
			{Name: "http_get", Description: "Fetches a URL.", Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string","format":"uri"},"headers":{"type":"object","additionalProperties":{"type":"string"}}},"required":["url"]}`)},
			{Name: "ping"},
		},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.body(req); err != nil {
			b.Fatal(err)
		}
	}
}
