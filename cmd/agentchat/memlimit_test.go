package main

import (
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"testing"
)

// TestMemoryLimit: without GOMEMLIMIT, serve gives the runtime a soft memory
// limit below the machine's (or container's) memory; with it, it leaves the
// runtime's alone.
func TestMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	debug.SetMemoryLimit(math.MaxInt64)
	setMemoryLimit(func(k string) string {
		if k == "GOMEMLIMIT" {
			return "1GiB"
		}
		return ""
	}, log)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("with GOMEMLIMIT set, the limit became %d", got)
	}

	setMemoryLimit(func(string) string { return "" }, log)
	if got := debug.SetMemoryLimit(-1); got == math.MaxInt64 || got <= 0 {
		t.Fatalf("without GOMEMLIMIT, the limit is %d: want one from the cgroup or the machine", got)
	}
}
