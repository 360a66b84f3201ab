package tied_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentchat/agentchat/internal/tied"
)

// The test binary plays three parts: the test, a parent it starts, and the
// child that parent starts tied (TIED_TEST_ROLE).
func TestMain(m *testing.M) {
	switch os.Getenv("TIED_TEST_ROLE") {
	case "parent":
		parent()
	case "child":
		// Nothing of the parent's reaches it (its stdin is /dev/null):
		// only the tie ends it. The test kills it if it is still here.
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// parent starts the child from a goroutine locked to a thread that ends at
// once (the parent-death signal follows the forking thread), prints the
// child's pid, and then, for each line the test sends, whether the child
// still runs.
func parent() {
	// The main goroutine keeps the main thread, which Go never ends: the
	// goroutine below runs on, and ends, another.
	runtime.LockOSThread()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TIED_TEST_ROLE=child")
	started := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: this thread ends with the goroutine
		started <- tied.Start(cmd)
	}()
	if err := <-started; err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println(cmd.Process.Pid)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(cmd.Process.Pid, &ws, unix.WNOHANG, nil)
		switch {
		case err != nil:
			fmt.Println("error:", err)
		case pid == 0:
			fmt.Println("running")
		default:
			fmt.Println("ended:", ws)
		}
	}
	os.Exit(0) // stdin closed: the test is gone
}

func TestChildEndsWithItsParent(t *testing.T) {
	// This process adopts its descendants' orphans (a subreaper), so the
	// child, once its parent is killed, is this test's to wait for.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", err)
	}
	p := exec.Command(os.Args[0], "-test.run=^$")
	p.Env = append(os.Environ(), "TIED_TEST_ROLE=parent")
	p.Stderr = os.Stderr
	stdin, err := p.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := p.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		p.Process.Kill()
		p.Wait()
	})
	out := bufio.NewScanner(stdout)
	if !out.Scan() {
		t.Fatalf("the parent said nothing: %v", out.Err())
	}
	child, err := strconv.Atoi(out.Text())
	if err != nil {
		t.Fatalf("the parent said %q, not the child's pid", out.Text())
	}
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) }) // if the tie failed

	// The thread that forked the child has ended: the child must not
	// have ended with it.
	fmt.Fprintln(stdin, "check")
	if !out.Scan() || out.Text() != "running" {
		t.Fatalf("after the forking goroutine's thread ended, the parent says of its child: %q %v", out.Text(), out.Err())
	}

	if err := p.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.Wait()
	// The parent is reaped, so its child is this process's now.
	ended := make(chan unix.WaitStatus, 1)
	go func() {
		var ws unix.WaitStatus
		if _, err := unix.Wait4(child, &ws, 0, nil); err != nil {
			t.Errorf("wait for the child: %v", err)
		}
		ended <- ws
	}()
	select {
	case ws := <-ended:
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("the child ended (%v), not by SIGKILL", ws)
		}
	case <-time.After(time.Minute):
		t.Fatal("the child outlived its parent by a minute")
	}
}
