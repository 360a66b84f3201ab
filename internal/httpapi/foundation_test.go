package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

func TestHealthIsOpen(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	if out := e.call(req{method: "GET", path: "/healthz"}, 200); out["status"] != "ok" {
		t.Fatalf("healthz %v", out)
	}
	if out := e.call(req{method: "GET", path: "/readyz"}, 200); out["status"] != "ready" {
		t.Fatalf("readyz %v", out)
	}
}

func TestAuthMatrix(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	now := time.Now()
	valid := signJWT(t, jwtSecret, jwt.MapClaims{"sub": "carol", "tenant": "acme", "exp": now.Add(time.Hour).Unix()})
	tests := []struct {
		name   string
		token  string
		header map[string]string
		path   string
		status int
		code   string
	}{
		{"no token", "", nil, "/v1/conversations", 401, "unauthorized"},
		{"unknown token", "nope", nil, "/v1/conversations", 401, "unauthorized"},
		{"prefix of a token", "alice-toke", nil, "/v1/conversations", 401, "unauthorized"},
		{"expired JWT", signJWT(t, jwtSecret, jwt.MapClaims{"sub": "carol", "tenant": "acme", "exp": now.Add(-time.Hour).Unix()}), nil, "/v1/conversations", 401, "unauthorized"},
		{"JWT without exp", signJWT(t, jwtSecret, jwt.MapClaims{"sub": "carol", "tenant": "acme"}), nil, "/v1/conversations", 401, "unauthorized"},
		{"JWT without tenant", signJWT(t, jwtSecret, jwt.MapClaims{"sub": "carol", "exp": now.Add(time.Hour).Unix()}), nil, "/v1/conversations", 401, "unauthorized"},
		{"JWT wrong signature", signJWT(t, "another-secret-0123456789", jwt.MapClaims{"sub": "carol", "tenant": "acme", "exp": now.Add(time.Hour).Unix()}), nil, "/v1/conversations", 401, "unauthorized"},
		{"JWT alg none", "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJjYXJvbCIsInRlbmFudCI6ImFjbWUiLCJleHAiOjQxMDI0NDQ4MDB9.", nil, "/v1/conversations", 401, "unauthorized"},
		{"malformed JWT", "a.b.c", nil, "/v1/conversations", 401, "unauthorized"},
		{"valid JWT", valid, nil, "/v1/conversations", 200, ""},
		{"static token", alice, nil, "/v1/conversations", 200, ""},
		{"matching tenant header", alice, map[string]string{"X-Tenant-ID": "acme"}, "/v1/conversations", 200, ""},
		{"other tenant header", alice, map[string]string{"X-Tenant-ID": "evil"}, "/v1/conversations", 403, "tenant_forbidden"},
		{"query token on a JSON route", "", nil, "/v1/conversations?access_token=" + alice, 401, "unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := *e
			e.t = t
			r := req{method: "GET", path: tt.path, token: tt.token, header: tt.header}
			if tt.status != 200 {
				resp := e.send(r)
				resp.Body.Close()
				if tt.status == 401 && resp.Header.Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
				e.apiError(r, tt.status, tt.code)
				return
			}
			e.call(r, 200)
		})
	}
}

func TestQueryTokenOnStreams(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	c := e.call(req{method: "POST", path: "/v1/conversations", token: alice}, 200)
	rd, resp := e.stream(req{method: "GET", path: fmt.Sprintf("/v1/conversations/%s/events?access_token=%s", c["id"], alice)})
	_ = rd
	resp.Body.Close()
}

func TestConversationLifecycle(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	empty := e.call(req{method: "POST", path: "/v1/conversations", token: alice}, 200)
	if empty["id"] == "" || empty["createdAt"] == "" || empty["updatedAt"] == "" {
		t.Fatalf("created %v", empty)
	}
	if _, ok := empty["title"]; ok {
		t.Fatalf("empty title not omitted: %v", empty)
	}
	c := e.call(req{method: "POST", path: "/v1/conversations", token: alice, body: map[string]any{"title": "Weekly report"}}, 200)
	id := c["id"].(string)
	if c["title"] != "Weekly report" || !strings.HasSuffix(c["createdAt"].(string), "Z") {
		t.Fatalf("created %v", c)
	}
	got := e.call(req{method: "GET", path: "/v1/conversations/" + id, token: alice}, 200)
	if got["title"] != "Weekly report" {
		t.Fatalf("get %v", got)
	}
	renamed := e.call(req{method: "PATCH", path: "/v1/conversations/" + id, token: alice, body: map[string]any{"title": "Renamed"}}, 200)
	if renamed["title"] != "Renamed" {
		t.Fatalf("renamed %v", renamed)
	}
	list := e.call(req{method: "GET", path: "/v1/conversations", token: alice}, 200)
	convs := list["conversations"].([]any)
	if len(convs) != 2 || convs[0].(map[string]any)["id"] != id || list["hasMore"] != false {
		t.Fatalf("list %v", list)
	}
	// Other principals see a 404, never the content.
	for _, other := range []string{bob, eve} {
		for _, r := range []req{
			{method: "GET", path: "/v1/conversations/" + id, token: other},
			{method: "PATCH", path: "/v1/conversations/" + id, token: other, body: map[string]any{"title": "x"}},
			{method: "DELETE", path: "/v1/conversations/" + id, token: other},
			{method: "GET", path: "/v1/conversations/" + id + "/messages", token: other},
			{method: "GET", path: "/v1/conversations/" + id + "/events", token: other},
			{method: "POST", path: "/v1/agent/chat", token: other, body: map[string]any{"conversationId": id, "input": "hi"}},
		} {
			e.apiError(r, 404, "conversation_not_found")
		}
		if l := e.call(req{method: "GET", path: "/v1/conversations", token: other}, 200); len(l["conversations"].([]any)) != 0 {
			t.Fatalf("%s lists alice's conversations", other)
		}
	}
	resp := e.send(req{method: "DELETE", path: "/v1/conversations/" + id, token: alice})
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete status %d", resp.StatusCode)
	}
	e.apiError(req{method: "GET", path: "/v1/conversations/" + id, token: alice}, 404, "conversation_not_found")
	e.apiError(req{method: "DELETE", path: "/v1/conversations/" + id, token: alice}, 404, "conversation_not_found")
}

func TestConversationPaging(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	want := map[string]bool{}
	for i := range 25 {
		c := e.call(req{method: "POST", path: "/v1/conversations", token: alice, body: map[string]any{"title": fmt.Sprint(i)}}, 200)
		want[c["id"].(string)] = true
	}
	cursor, pages, prev := "", 0, ""
	for {
		path := "/v1/conversations?limit=10"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		out := e.call(req{method: "GET", path: path, token: alice}, 200)
		pages++
		for _, c := range out["conversations"].([]any) {
			m := c.(map[string]any)
			id := m["id"].(string)
			if !want[id] {
				t.Fatalf("unexpected or repeated %s", id)
			}
			delete(want, id)
			if prev != "" && m["updatedAt"].(string) > prev {
				t.Fatalf("not newest first: %s after %s", m["updatedAt"], prev)
			}
			prev = m["updatedAt"].(string)
		}
		next, _ := out["nextCursor"].(string)
		if next == "" {
			if out["hasMore"] != false {
				t.Fatal("hasMore without a cursor")
			}
			break
		}
		cursor = next
	}
	if pages != 3 || len(want) != 0 {
		t.Fatalf("%d pages, %d conversations missing", pages, len(want))
	}
	e.apiError(req{method: "GET", path: "/v1/conversations?limit=0", token: alice}, 400, "invalid_limit")
	e.apiError(req{method: "GET", path: "/v1/conversations?limit=abc", token: alice}, 400, "invalid_limit")
	e.apiError(req{method: "GET", path: "/v1/conversations?cursor=garbage!", token: alice}, 400, "invalid_cursor")
	if out := e.call(req{method: "GET", path: "/v1/conversations?limit=1000", token: alice}, 200); len(out["conversations"].([]any)) != 25 {
		t.Fatal("limit above 100 not clamped")
	}
}

func TestBadBodies(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	tests := []struct {
		name, body string
		status     int
		code, in   string
	}{
		{"malformed", `{"title":`, 400, "invalid_json", ""},
		{"not an object", `["a"]`, 400, "invalid_json", ""},
		{"trailing data", `{"title":"a"} {}`, 400, "invalid_json", ""},
		{"unknown field", `{"titel":"a"}`, 400, "unknown_field", "titel"},
		{"wrong type", `{"title":42}`, 400, "invalid_field", "title"},
		{"too long title", `{"title":"` + strings.Repeat("x", 201) + `"}`, 422, "invalid_field", "title"},
		{"oversized", `{"title":"` + strings.Repeat("x", 70<<10) + `"}`, 413, "body_too_large", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := *e
			e.t = t
			errObj := e.apiError(req{method: "POST", path: "/v1/conversations", token: alice, body: tt.body}, tt.status, tt.code)
			if !strings.Contains(errObj["message"].(string), tt.in) {
				t.Fatalf("message %q does not name %q", errObj["message"], tt.in)
			}
		})
	}
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: `{"input": 5}`}, 400, "invalid_field")
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: `{"input": "  "}`}, 422, "invalid_input")
	e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: `{}`}, 422, "invalid_input")
	if list := e.call(req{method: "GET", path: "/v1/conversations", token: alice}, 200); len(list["conversations"].([]any)) != 0 {
		t.Fatal("a refused request created a conversation")
	}
}

func TestUnknownRoutes(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	e.apiError(req{method: "GET", path: "/v1/nothing", token: alice}, 404, "not_found")
	errObj := e.apiError(req{method: "PUT", path: "/v1/conversations", token: alice}, 405, "method_not_allowed")
	_ = errObj
}

func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	const writers = 50
	var wg sync.WaitGroup
	ids := make([]string, writers)
	for i := range writers {
		wg.Go(func() {
			token := []string{alice, bob}[i%2]
			out := e.chat(token, map[string]any{"input": fmt.Sprintf("hello number %d", i)})
			if end := last(out); end.Event != "agent.end" || end.Data["status"] != "succeeded" {
				t.Errorf("writer %d ended with %v", i, end)
				return
			}
			ids[i] = out[0].Data["conversationId"].(string)
		})
	}
	wg.Wait()
	for i, id := range ids {
		if id == "" {
			continue
		}
		token := []string{alice, bob}[i%2]
		msgs := e.call(req{method: "GET", path: "/v1/conversations/" + id + "/messages", token: token}, 200)["messages"].([]any)
		if len(msgs) != 2 || msgs[0].(map[string]any)["role"] != "user" || msgs[1].(map[string]any)["role"] != "assistant" {
			t.Fatalf("conversation %d has %v", i, msgs)
		}
		if !strings.Contains(msgs[0].(map[string]any)["content"].(string), fmt.Sprintf("number %d", i)) {
			t.Fatalf("conversation %d holds another writer's input", i)
		}
	}
	for _, token := range []string{alice, bob} {
		n := 0
		cursor := ""
		for {
			out := e.call(req{method: "GET", path: "/v1/conversations?limit=100&cursor=" + cursor, token: token}, 200)
			n += len(out["conversations"].([]any))
			if cursor, _ = out["nextCursor"].(string); cursor == "" {
				break
			}
		}
		if n != writers/2 {
			t.Fatalf("%s has %d conversations, want %d", token, n, writers/2)
		}
	}
}
