package clustertest

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// Model is a fake OpenAI-compatible model (package fakeupstream's) served
// by a process of its own, the command fakemodel, built without -race: the
// replicas' answers do not wait on the race-instrumented test process
// getting a CPU, which a loaded CI box did not give it for a minute. The
// process is the test's (see startChild).
type Model struct {
	// URL is the model's base URL, http://127.0.0.1:port.
	URL string
	t   testing.TB
}

// ModelOptions shape a Model's answers.
type ModelOptions struct {
	// Tokens is the length of an answer (a request's max_tokens wins);
	// default 20.
	Tokens int
	// Pace is the time between two tokens (fakeupstream.Options.Delay).
	Pace time.Duration
	// Hold stops streams after their first HoldAfter frames (at least one)
	// until Release, so that a test acts while runs are mid-stream however
	// slow the machine, instead of counting on a pace.
	Hold      bool
	HoldAfter int
	// HoldInput and HoldPrefix narrow Hold to the answers whose input (the
	// request's last user message) is HoldInput, or starts with HoldPrefix;
	// every other answer streams through.
	HoldInput, HoldPrefix string
}

// StartModel starts a fake model for the test and waits until it listens.
func StartModel(t testing.TB, o ModelOptions) *Model {
	t.Helper()
	args := []string{"-tokens", strconv.Itoa(o.Tokens), "-delay", o.Pace.String()}
	if o.Hold {
		args = append(args, "-hold", "-hold-after", strconv.Itoa(max(o.HoldAfter, 1)),
			"-hold-input", o.HoldInput, "-hold-prefix", o.HoldPrefix)
	}
	return &Model{URL: startChild(t, "fakemodel", args...), t: t}
}

// Env is the environment pointing a replica at the model.
func (m *Model) Env() []string {
	return []string{"AGENTCHAT_LLM=openai", "OPENAI_BASE_URL=" + m.URL + "/v1", "OPENAI_API_KEY=test-key"}
}

// Release lets every held stream go on, and holds no later one. Call it
// from the test's goroutine.
func (m *Model) Release() {
	m.t.Helper()
	// A bound only against a hung model: the test process, starved on a
	// loaded machine, may take a while to send the request.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL+"/control/release", nil)
	if err != nil {
		m.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatalf("release the fake model's streams: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		m.t.Fatalf("release the fake model's streams: %s", resp.Status)
	}
}
