package lockfile_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/lockfile"
)

// TestMain lets the test binary be the other process: with LOCKFILE_HOLD
// set it takes that lock, says so, and holds it until stdin closes.
func TestMain(m *testing.M) {
	if path := os.Getenv("LOCKFILE_HOLD"); path != "" {
		l, err := lockfile.Acquire(path)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the parent says or dies
		l.Release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// hold starts a child process holding path; stop ends it gracefully, kill with SIGKILL.
func hold(t *testing.T, path string) (pid int, stop func(), kill func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LOCKFILE_HOLD="+path)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("child: %q (%v)", line, err)
	}
	return cmd.Process.Pid,
		func() { in.Close(); _ = cmd.Wait() },
		func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
}

// Another process's lock refuses Acquire at once, naming its pid; the lock
// ends with that process, however it ends.
//
// Not parallel, nor is any test here: between fork and exec a child started
// by one test shares every open file description of this process, lock files
// included, so another test's Release would not free its lock at once.
func TestAcquireAgainstAnotherProcess(t *testing.T) {
	for _, how := range []string{"released", "killed"} {
		path := filepath.Join(t.TempDir(), "agentchat.lock")
		pid, stop, kill := hold(t, path)
		_, err := lockfile.Acquire(path)
		var held *lockfile.HeldError
		if !errors.As(err, &held) || held.PID != pid || held.Path != path || !strings.Contains(err.Error(), fmt.Sprint(pid)) {
			t.Fatalf("%s: Acquire while process %d holds it: %v", how, pid, err)
		}
		if how == "killed" {
			kill() // SIGKILL: no release, the kernel's end of the lock
		} else {
			stop()
		}
		l, err := lockfile.Acquire(path)
		if err != nil {
			t.Fatalf("%s: Acquire after the holder ended: %v", how, err)
		}
		b, _ := os.ReadFile(path)
		if strings.TrimSpace(string(b)) != fmt.Sprint(os.Getpid()) {
			t.Errorf("%s: the lock file says %q, want this pid %d", how, b, os.Getpid())
		}
		l.Release()
	}
}

// Within one process a second Acquire is refused too (each Acquire opens
// the file anew), and Release lets the next one in.
func TestAcquireRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentchat.lock")
	a, err := lockfile.Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	var held *lockfile.HeldError
	if _, err := lockfile.Acquire(path); !errors.As(err, &held) || held.PID != os.Getpid() {
		t.Fatalf("second Acquire: %v", err)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	b, err := lockfile.Acquire(path)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	b.Release()
	if _, err := lockfile.Acquire(filepath.Join(t.TempDir(), "missing", "x.lock")); err == nil || errors.As(err, &held) {
		t.Errorf("Acquire in a missing directory: %v", err)
	}
}
