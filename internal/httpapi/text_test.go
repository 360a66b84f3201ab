package httpapi_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawJWT signs a payload given byte for byte (a JSON library would mend
// invalid UTF-8 before it reached the server).
func rawJWT(secret, payload string) string {
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString([]byte(payload))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(signing))
	return signing + "." + enc.EncodeToString(mac.Sum(nil))
}

// TestTextAtTheEdge: NUL and invalid UTF-8 are refused where they enter,
// naming the field, on both backends: never a 500 from a database that
// cannot hold them, never silently replaced.
func TestTextAtTheEdge(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, o options) {
		e := setup(t, o)
		conv := e.call(req{method: "POST", path: "/v1/conversations", token: alice, body: map[string]any{"title": "mine"}}, 200)["id"].(string)
		exp := time.Now().Add(time.Hour).Unix()

		type check struct {
			name   string
			r      req
			status int
			code   string
			field  string // the message names it
		}
		var checks []check
		// Path ids that cannot exist are unknown ids, on every id route.
		for _, bad := range []string{"%00", "%ff%fe", "a%00b", "%c0%80", "%ed%a0%80", strings.Repeat("x", 300)} {
			for _, r := range []struct{ method, path, code string }{
				{"GET", "/v1/conversations/%s", "conversation_not_found"},
				{"PATCH", "/v1/conversations/%s", "conversation_not_found"},
				{"DELETE", "/v1/conversations/%s", "conversation_not_found"},
				{"GET", "/v1/conversations/%s/messages", "conversation_not_found"},
				{"GET", "/v1/conversations/%s/events", "conversation_not_found"},
				{"GET", "/v1/agent/runs/%s", "run_not_found"},
				{"GET", "/v1/agent/runs/%s/events", "run_not_found"},
				{"POST", "/v1/agent/runs/%s/cancel", "run_not_found"},
				{"GET", "/v1/agent/runs/%s/timeline", "run_not_found"},
				{"POST", "/v1/agent/confirmations/%s", "confirmation_not_found"},
				{"GET", "/api/v1/agent/runs/%s/events", "thread_not_found"},
			} {
				var body any
				if r.method == "PATCH" {
					body = map[string]any{"title": "x"}
				}
				if r.method == "POST" && strings.Contains(r.path, "confirmations") {
					body = map[string]any{"decision": "approve"}
				}
				checks = append(checks, check{r.method + " " + r.path + " " + bad,
					req{method: r.method, path: fmt.Sprintf(r.path, bad), token: alice, body: body}, 404, r.code, ""})
			}
		}
		bodies := []struct {
			name, method, path, body, field string
		}{
			{"create title NUL", "POST", "/v1/conversations", `{"title":"a\u0000b"}`, "title"},
			{"create title invalid UTF-8", "POST", "/v1/conversations", "{\"title\":\"a\xff\xfeb\"}", "title"},
			{"create title lone surrogate", "POST", "/v1/conversations", `{"title":"a\ud800b"}`, "title"},
			{"create title reversed surrogates", "POST", "/v1/conversations", `{"title":"\udc00\ud800"}`, "title"},
			{"create title encoded surrogate", "POST", "/v1/conversations", "{\"title\":\"\xed\xa0\x80\"}", "title"},
			{"create title overlong NUL", "POST", "/v1/conversations", "{\"title\":\"\xc0\x80\"}", "title"},
			{"rename title NUL", "PATCH", "/v1/conversations/" + conv, `{"title":"a\u0000b"}`, "title"},
			{"rename title invalid UTF-8", "PATCH", "/v1/conversations/" + conv, "{\"title\":\"\xff\"}", "title"},
			{"chat title NUL", "POST", "/v1/agent/chat", `{"input":"hi","title":"a\u0000b"}`, "title"},
			{"chat input NUL", "POST", "/v1/agent/chat", `{"input":"a\u0000b"}`, "input"},
			{"chat input invalid UTF-8", "POST", "/v1/agent/chat", "{\"input\":\"a\x80b\"}", "input"},
			{"chat conversationId NUL", "POST", "/v1/agent/chat", `{"input":"hi","conversationId":"a\u0000"}`, "conversationId"},
			{"confirmation reason NUL", "POST", "/v1/agent/confirmations/01900000-0000-7000-8000-000000000000", `{"decision":"reject","reason":"a\u0000"}`, "reason"},
			{"confirmation args NUL", "POST", "/v1/agent/confirmations/01900000-0000-7000-8000-000000000000", `{"decision":"approve","args":{"text":"\u0000"}}`, "args.text"},
			{"AI SDK text NUL", "POST", "/v1/agent/chat?format=vercel-ai", `{"id":"c1","messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"a\u0000"}]}]}`, "messages[0].parts[0].text"},
			{"AI SDK invalid UTF-8", "POST", "/v1/agent/chat?format=vercel-ai", "{\"id\":\"c1\",\"messages\":[{\"id\":\"m\",\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"\xff\"}]}]}", "messages[0].parts[0].text"},
			{"AG-UI threadId NUL", "POST", "/api/v1/agent/runs", `{"threadId":"a\u0000","messages":[{"id":"m","role":"user","content":"hi"}]}`, "threadId"},
			{"AG-UI content NUL", "POST", "/api/v1/agent/runs", `{"threadId":"t1","messages":[{"id":"m","role":"user","content":"a\u0000"}]}`, "messages[0].content"},
			{"AG-UI state key NUL", "POST", "/api/v1/agent/runs", `{"threadId":"t1","state":{"a\u0000":1},"messages":[{"id":"m","role":"user","content":"hi"}]}`, "state"},
			{"AG-UI forwarded invalid UTF-8", "POST", "/api/v1/agent/runs", "{\"threadId\":\"t1\",\"forwardedProps\":{\"x\":\"\xfe\"},\"messages\":[{\"id\":\"m\",\"role\":\"user\",\"content\":\"hi\"}]}", "forwardedProps.x"},
		}
		for _, b := range bodies {
			checks = append(checks, check{b.name, req{method: b.method, path: b.path, token: alice, body: b.body}, 400, "invalid_text", b.field})
		}
		queries := []struct{ name, path, field string }{
			{"tool_name NUL", "/v1/conversations/" + conv + "/messages?tool_name=%00", "tool_name"},
			{"tool_name invalid UTF-8", "/v1/conversations/" + conv + "/messages?tool_name=%ff", "tool_name"},
			{"runId NUL", "/v1/conversations/" + conv + "/messages?runId=a%00", "runId"},
			{"history threadId NUL", "/api/v1/agent/history?threadId=%00", "threadId"},
			{"history threadId invalid UTF-8", "/api/v1/agent/history?threadId=%ff%fe", "threadId"},
			{"cursor NUL", "/v1/conversations?cursor=%00", "cursor"},
			{"status NUL", "/v1/agent/confirmations?status=%00", "status"},
		}
		for _, q := range queries {
			checks = append(checks, check{q.name, req{method: "GET", path: q.path, token: alice}, 400, "invalid_text", q.field})
		}
		for _, tok := range []struct{ name, token string }{
			{"JWT sub NUL", rawJWT(jwtSecret, fmt.Sprintf(`{"sub":"a\u0000b","tenant":"acme","exp":%d}`, exp))},
			{"JWT tenant NUL", rawJWT(jwtSecret, fmt.Sprintf(`{"sub":"carol","tenant":"ac\u0000me","exp":%d}`, exp))},
			{"JWT sub invalid UTF-8", rawJWT(jwtSecret, fmt.Sprintf("{\"sub\":\"\xff\",\"tenant\":\"acme\",\"exp\":%d}", exp))},
			{"JWT tenant lone surrogate", rawJWT(jwtSecret, fmt.Sprintf(`{"sub":"carol","tenant":"\udfff","exp":%d}`, exp))},
			{"JWT tenant too long", rawJWT(jwtSecret, fmt.Sprintf(`{"sub":"carol","tenant":%q,"exp":%d}`, strings.Repeat("t", 4000), exp))},
			{"JWT other claim NUL", rawJWT(jwtSecret, fmt.Sprintf(`{"sub":"carol","tenant":"acme","name":"\u0000","exp":%d}`, exp))},
		} {
			checks = append(checks, check{tok.name, req{method: "GET", path: "/v1/conversations", token: tok.token}, 401, "unauthorized", ""})
		}
		for _, c := range checks {
			t.Run(c.name, func(t *testing.T) {
				e := *e
				e.t = t
				errObj := e.apiError(c.r, c.status, c.code)
				if msg, _ := errObj["message"].(string); c.field != "" && !strings.Contains(msg, `"`+c.field+`"`) {
					t.Errorf("message %q does not name %q", msg, c.field)
				}
			})
		}
		// The conversation the refused rename aimed at is untouched.
		if got := e.call(req{method: "GET", path: "/v1/conversations/" + conv, token: alice}, 200); got["title"] != "mine" {
			t.Errorf("title now %v", got["title"])
		}
	})
}

// TestUnicodeRoundTrip: every valid text goes in and comes back unchanged,
// supplementary planes included, on both backends.
func TestUnicodeRoundTrip(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, o options) {
		e := setup(t, o)
		for _, title := range []string{"😀🎉 𝄞 🇯🇵 👩‍👩‍👧", "\U0010FFFF\uFFFE\uFEFF", "a\x01b\x7fc", "عربى \u202e עברית", `"\u0000" is six characters`} {
			c := e.call(req{method: "POST", path: "/v1/conversations", token: alice, body: map[string]any{"title": title}}, 200)
			got := e.call(req{method: "GET", path: "/v1/conversations/" + c["id"].(string), token: alice}, 200)
			if got["title"] != title {
				t.Errorf("title %q came back as %q", title, got["title"])
			}
		}
		input := "Héllo 😀 𝄞 — what time is it?"
		frames := e.chat(alice, map[string]any{"input": input})
		start, _ := find(frames, "agent.start")
		run := e.call(req{method: "GET", path: "/v1/agent/runs/" + start.Data["runId"].(string), token: alice}, 200)
		if run["input"] != input {
			t.Errorf("input came back as %q", run["input"])
		}
	})
}

// TestBearerScheme: only the Bearer scheme carries a token.
func TestBearerScheme(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	for _, tt := range []struct {
		header string
		status int
	}{
		{alice, 401},
		{"Token " + alice, 401},
		{"Basic " + alice, 401},
		{"Bearer" + alice, 401},
		{"Bearer " + alice, 200},
		{"bearer " + alice, 200},
		{"BEARER " + alice, 200},
		{"Bearer  " + alice, 200},
	} {
		r := req{method: "GET", path: "/v1/conversations", header: map[string]string{"Authorization": tt.header}}
		if tt.status == 200 {
			e.call(r, 200)
			continue
		}
		e.apiError(r, http.StatusUnauthorized, "unauthorized")
	}
}
