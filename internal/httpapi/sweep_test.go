package httpapi_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestHostileSweep sends what a hostile client tries on every kind of
// route and checks that the answer is never a server error and always a
// JSON error body (or a stream), on both backends.
func TestHostileSweep(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, o options) {
		e := setup(t, o)
		conv := e.call(req{method: "POST", path: "/v1/conversations", token: alice, body: map[string]any{"title": "x"}}, 200)["id"].(string)
		deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
		reqs := []req{
			{method: "GET", path: "/v1/conversations?limit=-1"},
			{method: "GET", path: "/v1/conversations?limit=99999999999999999999"},
			{method: "GET", path: "/v1/conversations?limit=0x10"},
			{method: "GET", path: "/v1/conversations?limit=1&limit=100000"},
			{method: "GET", path: "/v1/conversations?cursor=" + strings.Repeat("A", 4000)},
			{method: "GET", path: "/v1/conversations?cursor=OTk5OTk5OTk5OTk5OTk5OTk5OTk6eA"},
			{method: "GET", path: "/v1/conversations/" + conv + "/messages?cursor=LTE6eA&limit=5"},
			{method: "GET", path: "/v1/conversations/" + conv + "/messages?tool_name=" + strings.Repeat("%F0%9F%98%80", 3000)},
			{method: "GET", path: "/v1/conversations/" + conv + "/events", header: map[string]string{"Last-Event-ID": "99999999999999999999999"}},
			{method: "GET", path: "/v1/conversations/" + conv + "/events", header: map[string]string{"Last-Event-ID": "-5"}},
			{method: "GET", path: "/v1/conversations/" + conv + "/events?after=1e9"},
			{method: "GET", path: "/api/v1/agent/runs/t/events", header: map[string]string{"Last-Event-ID": "9223372036854775807"}},
			{method: "GET", path: "/api/v1/agent/history?threadId=t&before=0000-00-00"},
			{method: "GET", path: "/api/v1/agent/history?threadId=" + strings.Repeat("t", 5000)},
			{method: "GET", path: "/v1/conversations", header: map[string]string{"X-Tenant-ID": "ácme\u202e"}},
			{method: "GET", path: "/v1/conversations", header: map[string]string{"X-Tenant-ID": "\xff\xfe"}},
			{method: "GET", path: "/v1/agent/confirmations?status=" + strings.Repeat("p", 10000)},
			{method: "GET", path: "/v1/agent/chat/" + strings.Repeat("c", 500) + "/stream"},
			{method: "POST", path: "/v1/conversations", body: deep},
			{method: "POST", path: "/v1/conversations", body: `{"title":` + deep + `}`},
			{method: "POST", path: "/v1/conversations", body: `{"title":1e999}`},
			{method: "POST", path: "/v1/conversations", body: `null`},
			{method: "POST", path: "/v1/conversations", body: `"just a string"`},
			{method: "POST", path: "/v1/agent/chat", body: `null`},
			{method: "POST", path: "/v1/agent/chat", body: `{"input":"hi","conversationId":"` + strings.Repeat("c", 5000) + `"}`},
			{method: "POST", path: "/v1/agent/chat?format=vercel-ai", body: `{"conversationId":"` + strings.Repeat("c", 5000) + `","messages":[]}`},
			{method: "POST", path: "/v1/agent/chat?format=vercel-ai", body: `{"id":"c","trigger":"regenerate-message","messageId":"` + strings.Repeat("m", 5000) + `","messages":[]}`},
			{method: "POST", path: "/api/v1/agent/runs", body: `{"messages":[{"role":"tool","toolCallId":"` + strings.Repeat("k", 5000) + `","content":"x"}],"threadId":"t2"}`},
			{method: "POST", path: "/api/v1/agent/runs", body: `{"state":` + deep + `,"messages":[]}`},
			{method: "POST", path: "/api/v1/agent/runs", body: `{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"data","value":"x","mimeType":"image/\u0000"}}]}]}`},
			{method: "POST", path: "/v1/agent/confirmations/c", body: `{"decision":"approve","args":[1]}`},
			{method: "POST", path: "/v1/agent/confirmations/c", body: `{"decision":"approve","args":` + deep + `}`},
			{method: "PATCH", path: "/v1/conversations/" + conv, body: `{"title":null}`},
		}
		for _, r := range reqs {
			r.token = alice
			resp := e.send(r)
			raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			name := r.method + " " + r.path
			if len(name) > 120 {
				name = name[:120] + "…"
			}
			if resp.StatusCode >= 500 {
				t.Errorf("%s: %d %s", name, resp.StatusCode, raw)
				continue
			}
			if resp.Header.Get("Content-Type") == "text/event-stream" || resp.StatusCode < 300 {
				continue
			}
			var body struct {
				Error struct{ Code, Message string }
			}
			if json.Unmarshal(raw, &body) != nil || body.Error.Code == "" || body.Error.Message == "" {
				t.Errorf("%s: %d without a JSON error: %s", name, resp.StatusCode, raw)
			}
		}
	})
}
