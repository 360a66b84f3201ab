package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The data a refusal carries (the tenant's limit, the reason an input is
// refused) reaches the client's message.
func TestRefusalsSayWhy(t *testing.T) {
	t.Parallel()
	g := newGate()
	e := setup(t, options{model: g, maxRunsPerTenant: 1})
	t.Cleanup(func() { close(g.release) }) // before the stack stops

	e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "hold on"}})
	<-g.started // the tenant's one run is executing

	resp := e.send(req{method: "POST", path: "/v1/agent/chat", token: bob, body: map[string]any{"input": "me too"}})
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var body struct {
		Error struct{ Code, Message string }
	}
	json.Unmarshal(raw, &body)
	const want = "this tenant already has as many runs in progress as it may (limit 1); try again when one has finished"
	if resp.StatusCode != http.StatusTooManyRequests || body.Error.Code != "too_many_runs" || body.Error.Message != want {
		t.Fatalf("second run of the tenant: %d %s, want 429 too_many_runs saying %q", resp.StatusCode, raw, want)
	}
	if ra := resp.Header.Get("Retry-After"); ra != "2" {
		t.Errorf("Retry-After = %q, want 2", ra)
	}
	// The limit is the tenant's: another tenant still starts.
	e.stream(req{method: "POST", path: "/v1/agent/chat", token: eve, body: map[string]any{"input": "hello"}})

	long := map[string]any{"input": strings.Repeat("x", 32001)}
	errObj := e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: long}, 422, "invalid_input")
	if want := "input has 32001 characters, the limit is 32000"; errObj["message"] != want {
		t.Errorf("message %q, want the run service's reason, %q", errObj["message"], want)
	}
}
