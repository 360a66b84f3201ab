package clustertest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/tied"
)

// startChild starts name, one of the helper programs Binary builds beside
// agentchat (fakemodel, tcpproxy), with args, and returns what it printed
// after "<name> listening on " on its first line: where it serves.
//
// The child is the test's: it is killed when the test ends, and a test
// process that dies without its cleanups (a panic, go test's -timeout, a
// kill) leaves no child behind: the kernel kills it with this process
// (tied), and where it cannot, the child exits by itself when its stdin
// ends, a pipe whose other end only this process holds. A failed test logs
// what the child wrote to stderr.
func startChild(t testing.TB, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(filepath.Dir(Binary(t)), name), args...)
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logFile
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tied.Start(cmd); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		<-done
		logFile.Close()
		if b, _ := os.ReadFile(logPath); t.Failed() && len(b) > 0 {
			t.Logf("---- %s log ----\n%s", name, b)
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), name+" listening on "); ok {
				addr <- rest
			}
		}
		// Wait closes stdout: read it to its end first (os/exec's rule).
		for sc.Scan() {
		}
		cmd.Wait()
		close(done)
	}()
	select {
	case a := <-addr:
		return a
	case <-done:
		b, _ := os.ReadFile(logPath)
		t.Fatalf("%s exited at start: %v\n%s", name, cmd.ProcessState, b)
	case <-time.After(startBound):
		t.Fatalf("%s did not start listening within %s", name, startBound)
	}
	return ""
}
