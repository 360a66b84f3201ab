package run

import (
	"context"
	"log/slog"

	"github.com/agentchat/agentchat/internal/engine"
)

// logEnd writes a run's "run ended" line: at INFO for a run that succeeded,
// was cancelled or waits for a person, at WARN for a failed one, and with
// the error's code and (public, already scrubbed) message whenever the
// outcome carries one, so the log says why a run failed without a look at
// its timeline.
func logEnd(log *slog.Logger, o engine.Outcome, attrs ...any) {
	level := slog.LevelInfo
	if o.Status == engine.StatusFailed {
		level = slog.LevelWarn
	}
	attrs = append([]any{"status", o.Status}, attrs...)
	if o.Error != nil {
		attrs = append(attrs, "error_code", o.Error.Code, "error", o.Error.Message)
	}
	// No request context: the logger's attributes carry the run's ids.
	log.Log(context.Background(), level, "run ended", attrs...)
}
