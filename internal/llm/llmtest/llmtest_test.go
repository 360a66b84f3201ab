package llmtest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/llm/llmtest"
)

func TestUnknownPath(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewAnthropicServer(t, llmtest.Options{})
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("status %d, want 404 for another provider's path", resp.StatusCode)
	}
}
