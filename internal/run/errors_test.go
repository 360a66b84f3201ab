package run_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/bus/membus"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/run"
)

// The refusals that carry data carry it as fields, for errors.As: the
// HTTP edge reads the limit and the reason from them, never from the text.
func TestRefusalsCarryTheirData(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	holding := engineFunc(func(ctx context.Context, _ engine.Task, _ engine.Host) engine.Outcome {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return engine.Outcome{Status: engine.StatusSucceeded}
	})
	b := membus.New(0)
	t.Cleanup(func() { b.Close() })
	s := run.New(run.Config{Store: openStore(t), Bus: b, Engine: holding, Sole: true, MaxRunsPerTenant: 1, MaxInputChars: 10})
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	defer close(release)

	if _, err := s.Start(t.Context(), alice, run.StartRequest{Input: "first"}, false); err != nil {
		t.Fatal(err)
	}
	_, err := s.Start(t.Context(), alice, run.StartRequest{Input: "second"}, false)
	var tooMany *run.TooManyRunsError
	if !errors.As(err, &tooMany) || tooMany.Limit != 1 || !errors.Is(err, run.ErrTooManyRuns) {
		t.Fatalf("second start: %v (%T), want a *run.TooManyRunsError with Limit 1 that is ErrTooManyRuns", err, err)
	}

	tests := []struct {
		name   string
		start  func() error
		reason string
	}{
		{"empty input", func() error {
			_, err := s.Start(t.Context(), alice, run.StartRequest{Input: "  "}, false)
			return err
		}, "input is empty"},
		{"input over the limit", func() error {
			_, err := s.Start(t.Context(), alice, run.StartRequest{Input: strings.Repeat("x", 11)}, false)
			return err
		}, "input has 11 characters, the limit is 10"},
		{"input not text", func() error {
			_, err := s.Start(t.Context(), alice, run.StartRequest{Input: "a\x00b"}, false)
			return err
		}, "input must be UTF-8 text without NUL characters"},
		{"continue without replies", func() error {
			_, err := s.Continue(t.Context(), alice, "thread", nil, "")
			return err
		}, "no decision to continue with"},
	}
	for _, tt := range tests {
		err := tt.start()
		var input *run.InputError
		if !errors.As(err, &input) || input.Reason != tt.reason || !errors.Is(err, run.ErrInvalidInput) {
			t.Errorf("%s: %v (%T), want a *run.InputError with reason %q that is ErrInvalidInput", tt.name, err, err, tt.reason)
		}
	}
}
