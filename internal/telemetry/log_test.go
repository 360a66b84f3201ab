package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/telemetry"
)

// Every line logged with a request's context carries its request_id once;
// a caller's id is kept only when it is plain.
func TestLogLinesCarryTheRequestID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ given, want string }{
		{"abc-123", "abc-123"},
		{"", ""},              // a new one
		{"a b\nforged=1", ""}, // refused: a new one
	} {
		var buf bytes.Buffer
		log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(&buf, nil)))
		ctx, id := telemetry.WithRequestID(context.Background(), tc.given)
		if tc.want != "" && id != tc.want || tc.want == "" && (id == tc.given || len(id) != 24) {
			t.Fatalf("given %q: id %q", tc.given, id)
		}
		if telemetry.RequestID(ctx) != id {
			t.Fatalf("RequestID = %q, want %q", telemetry.RequestID(ctx), id)
		}
		log.InfoContext(ctx, "one")
		log.With("request_id", id).InfoContext(ctx, "two")
		log.Info("three")
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		for i, line := range lines {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(line, `"request_id"`); i < 2 && (n != 1 || rec["request_id"] != id) || i == 2 && n != 0 {
				t.Fatalf("line %d: %s", i, line)
			}
		}
	}
}
