package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMain lets the test binary run `agentchat serve` as a child process
// (AGENTCHAT_TEST_SERVE set), so tests can put a second server beside it.
func TestMain(m *testing.M) {
	if os.Getenv("AGENTCHAT_TEST_SERVE") != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := dispatch(ctx, []string{"serve"}, os.Getenv, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// childServe starts serve in a child process with env (plus a free port)
// and returns once it listens; stop sends SIGTERM and waits.
func childServe(t *testing.T, env ...string) (pid int, stop func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"AGENTCHAT_TEST_SERVE=1", "AGENTCHAT_ADDR=127.0.0.1:0", "AGENTCHAT_LOG_LEVEL=warn"}, env...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	for !strings.Contains(sc.Text(), "agentchat is listening on") {
		if !sc.Scan() {
			_ = cmd.Wait()
			t.Fatalf("the child serve ended before listening: %s", stderr.String())
		}
	}
	go func() { // keep the pipe drained
		for sc.Scan() {
		}
	}()
	return cmd.Process.Pid, func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("child serve: %v\n%s", err, stderr.String())
		}
	}
}

// A second serve on a data directory (or SQLite file) another serve uses
// refuses to start, naming that process, before it opens anything; once
// the first is gone, the directory is free. Main started the second one
// silently beside the first.
func TestServeRefusesADataDirInUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name  string
		first []string
		again map[string]string
		want  string
	}{
		{name: "same data dir", first: []string{"AGENTCHAT_DATA_DIR=" + filepath.Join(dir, "a")},
			again: map[string]string{"AGENTCHAT_DATA_DIR": filepath.Join(dir, "a")}, want: "the data directory " + filepath.Join(dir, "a")},
		{name: "same SQLite file elsewhere", first: []string{"AGENTCHAT_DATA_DIR=" + filepath.Join(dir, "b"), "AGENTCHAT_STORE=sqlite:" + filepath.Join(dir, "db", "shared.db")},
			again: map[string]string{"AGENTCHAT_DATA_DIR": filepath.Join(dir, "c"), "AGENTCHAT_STORE": "sqlite:" + filepath.Join(dir, "db", "shared.db")},
			want:  "the SQLite file " + filepath.Join(dir, "db", "shared.db")},
	}
	for _, tt := range tests {
		pid, stop := childServe(t, tt.first...)
		tt.again["AGENTCHAT_ADDR"] = "127.0.0.1:0"
		// Should the second serve start after all, it is stopped as soon as
		// it says it listens, and the test fails instead of hanging.
		ctx, cancel := context.WithCancel(context.Background())
		stdout := &listenWatch{listening: cancel}
		var stderr bytes.Buffer
		code := dispatch(ctx, []string{"serve"}, env(tt.again), stdout, &stderr)
		cancel()
		if code != 1 || !strings.Contains(stderr.String(), tt.want) || !strings.Contains(stderr.String(), fmt.Sprintf("process %d", pid)) {
			t.Errorf("%s: second serve exit %d, stderr %q; want 1 and a refusal naming %s and process %d", tt.name, code, stderr.String(), tt.want, pid)
		}
		if strings.Contains(stdout.String(), "listening") {
			t.Errorf("%s: the second serve listened beside the first: %s", tt.name, stdout.String())
		}
		stop()
		// The first is gone: the same settings start.
		_, stop = childServe(t, tt.first...)
		stop()
	}
}

// listenWatch is serve's stdout that calls listening once serve says it listens.
type listenWatch struct {
	bytes.Buffer
	listening func()
}

func (w *listenWatch) Write(p []byte) (int, error) {
	n, err := w.Buffer.Write(p)
	if strings.Contains(w.String(), "agentchat is listening on") {
		w.listening()
	}
	return n, err
}
