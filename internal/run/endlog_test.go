package run_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/run"
)

// A failed run's "run ended" line is a warning that says why (the error's
// code and message), whether its executor ended it or a takeover did; a run
// that succeeded stays at INFO. Main logged both failures at INFO without
// their cause.
func TestFailedRunEndIsAWarningWithItsCause(t *testing.T) {
	t.Parallel()
	st, b := openStore(t), newRetainingBus(t)
	var logs logCapture
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	eng := engineFunc(func(ctx context.Context, t engine.Task, h engine.Host) engine.Outcome {
		if t.Run.Input == "fail" {
			return engine.Outcome{Status: engine.StatusFailed, Error: &event.ErrorInfo{Code: "model_error", Message: "the model provider refused the call"}}
		}
		return engine.Outcome{Status: engine.StatusSucceeded}
	})
	lost := abandoned(t, st, b, 1, 1, false) // a dead replica's run, ended by takeover
	s := run.New(run.Config{Store: st, Bus: b, Engine: eng, ReplicaID: "r", LeaseTTL: leaseTTL, SweepInterval: 20 * time.Millisecond, Logger: log})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		s.Shutdown(ctx)
	})
	ids := map[string]string{}
	for _, input := range []string{"fail", "succeed"} {
		started, err := s.Start(context.Background(), alice, run.StartRequest{Input: input}, false)
		if err != nil {
			t.Fatal(err)
		}
		waitRun(t, st, started.Run.ID, ended)
		ids[started.Run.ID] = input
	}
	waitRun(t, st, lost.ID, ended)
	ids[lost.ID] = "takeover"

	want := map[string]map[string]any{
		"fail":     {"level": "WARN", "status": "failed", "error_code": "model_error", "error": "the model provider refused the call"},
		"succeed":  {"level": "INFO", "status": "succeeded", "error_code": nil, "error": nil},
		"takeover": {"level": "WARN", "status": "failed", "error_code": "executor_lost", "by": "takeover"},
	}
	// Each end is logged after its status is stored.
	logs.waitFor(t, 5*time.Second, func(lines []string) bool {
		return strings.Count(strings.Join(lines, "\n"), `"msg":"run ended"`) >= len(ids)
	})
	seen := map[string]bool{}
	for _, line := range logs.lines() {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		id, _ := rec["run_id"].(string)
		if rec["msg"] != "run ended" || ids[id] == "" {
			continue
		}
		seen[ids[id]] = true
		for k, v := range want[ids[id]] {
			if rec[k] != v {
				t.Errorf("%s run: %s is %v, want %v in %s", ids[id], k, rec[k], v, line)
			}
		}
		if ids[id] == "takeover" && rec["error"] == "" {
			t.Errorf("takeover: no error message in %s", line)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("no \"run ended\" line for the %s run", name)
		}
	}
	if r, _ := st.GetRun(context.Background(), alice, lost.ID); r.Status != chat.RunFailed {
		t.Errorf("the abandoned run is %s", r.Status)
	}
}
