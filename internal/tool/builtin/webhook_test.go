package builtin

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/tool"
)

func TestWebhook(t *testing.T) {
	t.Parallel()
	type received struct {
		body        string
		contentType string
	}
	tests := []struct {
		name      string
		status    int
		args      map[string]any
		wantBody  string
		wantError string
	}{
		{"text only", http.StatusOK, map[string]any{"text": "build green"}, `{"text":"build green"}`, ""},
		{"with title", http.StatusNoContent, map[string]any{"text": "build green", "title": "CI"}, `{"text":"build green","title":"CI"}`, ""},
		{"server error", http.StatusInternalServerError, map[string]any{"text": "x"}, "", "webhook answered HTTP 500: boom"},
		{"missing text", http.StatusOK, map[string]any{"title": "t"}, "", "invalid arguments: missing property 'text'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := make(chan received, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got <- received{string(b), r.Header.Get("Content-Type")}
				if tt.status >= 400 {
					http.Error(w, "boom", tt.status)
					return
				}
				w.WriteHeader(tt.status)
			}))
			t.Cleanup(srv.Close)
			r := setup(t, Config{HTTPClient: srv.Client(), Webhook: WebhookConfig{URL: srv.URL + "/hook"}})
			res := call(t, r, "send_webhook", tt.args)
			if tt.wantError != "" {
				if res.Status != tool.StatusFailure || !strings.Contains(res.Error, tt.wantError) {
					t.Fatalf("result %+v\nwant failure containing %q", res, tt.wantError)
				}
				return
			}
			if res.Status != tool.StatusSuccess {
				t.Fatalf("result %+v", res)
			}
			rec := <-got
			if rec.body != tt.wantBody || !strings.HasPrefix(rec.contentType, "application/json") {
				t.Fatalf("webhook received %s (%s), want %s", rec.body, rec.contentType, tt.wantBody)
			}
		})
	}
}

func TestWebhookErrorsHideURL(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	endpoint := srv.URL + "/hooks/secret-token-42"
	client := srv.Client()
	srv.Close() // nothing listens any more: the POST fails to connect

	tests := []struct {
		name string
		cfg  Config
		tool string
	}{
		{"webhook", Config{HTTPClient: client, Webhook: WebhookConfig{URL: endpoint}}, "send_webhook"},
		{"feishu", Config{HTTPClient: client, Feishu: FeishuConfig{WebhookURL: endpoint}}, "send_feishu_message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := call(t, setup(t, tt.cfg), tt.tool, map[string]any{"text": "x"})
			if res.Status != tool.StatusFailure {
				t.Fatalf("result %+v, want failure", res)
			}
			if strings.Contains(res.Error, "secret-token-42") {
				t.Fatalf("error leaks the webhook URL: %q", res.Error)
			}
		})
	}
}

func TestWebhookNotConfigured(t *testing.T) {
	t.Parallel()
	res := call(t, setup(t, Config{}), "send_webhook", map[string]any{"text": "hi"})
	if res.Status != tool.StatusFailure || !strings.Contains(res.Error, "AGENTCHAT_WEBHOOK_URL") {
		t.Fatalf("result %+v", res)
	}
}
