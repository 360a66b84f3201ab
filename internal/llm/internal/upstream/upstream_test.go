package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/llm"
)

func TestCode(t *testing.T) {
	t.Parallel()
	tests := map[int]string{
		400: llm.CodeBadRequest, 401: llm.CodeUnauthorized, 402: llm.CodeUnauthorized,
		403: llm.CodeUnauthorized, 404: llm.CodeBadRequest, 408: llm.CodeTimeout,
		413: llm.CodeBadRequest, 422: llm.CodeBadRequest, 429: llm.CodeRateLimited,
		500: llm.CodeUnavailable, 503: llm.CodeUnavailable, 529: llm.CodeUnavailable,
		200: llm.CodeUnknown,
	}
	for status, want := range tests {
		if got := Code(status); got != want {
			t.Errorf("Code(%d) = %s, want %s", status, got, want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		header http.Header
		want   time.Duration
	}{
		{nil, 0},
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"3"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(10 * time.Second).Format(http.TimeFormat)}}, 10 * time.Second},
		{http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After": {"-1"}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
	}
	for _, tt := range tests {
		if got := RetryAfter(tt.header, now); got != tt.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestErrorBodyMessage(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		`{"error":{"message":"model not found","type":"invalid_request_error"}}`:      "model not found",
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`: "Overloaded",
		`{"error":"plain string"}`:      "plain string",
		`{"message":"top level"}`:       "top level",
		`upstream connect error`:        "upstream connect error",
		`<html><body>502</body></html>`: "",
		``:                              "",
		strings.Repeat("x", 400):        "",
	}
	for body, want := range tests {
		if got := ErrorBodyMessage([]byte(body)); got != want {
			t.Errorf("ErrorBodyMessage(%.40q) = %q, want %q", body, got, want)
		}
	}
}

func TestNoSecretInErrors(t *testing.T) {
	t.Parallel()
	const key = "sk-secret-key-123"
	p := Provider{Name: "the model provider", Host: "api.example.com", Secret: key}
	cause := fmt.Errorf("POST https://api.example.com/v1?key=%s: %w", key, io.ErrUnexpectedEOF)
	errs := []error{
		p.StatusError(400, nil, "bad key "+key, cause),
		p.StatusError(401, nil, "Incorrect API key provided: "+key, cause),
		p.StartError(context.Background(), cause, false, time.Second),
		p.StreamCut(cause),
		p.BadStream(cause),
	}
	for _, err := range errs {
		for e := error(err); e != nil; e = errors.Unwrap(e) {
			if strings.Contains(e.Error(), key) || strings.Contains(fmt.Sprintf("%+v", e), key) {
				t.Errorf("key in %q", e.Error())
			}
		}
	}
	// Scrubbing keeps the conditions callers test.
	if !errors.Is(p.StreamCut(cause), llm.ErrStreamCut) || !errors.Is(p.Cause(cause), io.ErrUnexpectedEOF) {
		t.Error("scrubbed errors lost errors.Is")
	}
	// Too short a key is not scrubbed: it would shred every message.
	short := Provider{Secret: "a"}
	if got := short.Scrub("a cat"); got != "a cat" {
		t.Errorf("Scrub with a one-letter key = %q", got)
	}
}

func TestFirstAnswer(t *testing.T) {
	t.Parallel()
	ctx, stop, cancel := FirstAnswer(t.Context(), time.Hour)
	if stop() || ctx.Err() != nil {
		t.Fatal("fired early")
	}
	cancel()
	if ctx.Err() == nil {
		t.Fatal("cancel did not end the request context")
	}

	ctx, stop, cancel = FirstAnswer(t.Context(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	if !stop() {
		t.Fatal("stop() = false after the bound fired")
	}
}
