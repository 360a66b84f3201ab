package tied

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// The parent-death signal (prctl(2), PR_SET_PDEATHSIG) is sent when the
// thread that forked the child ends, not the process: a Go program ends a
// thread when a goroutine locked to it returns, and any goroutine may be
// the one that starts a child. So every child is started from one
// goroutine locked to its thread for the life of the process, and the
// signal comes only when the process itself is gone.
var forker struct {
	once sync.Once
	reqs chan forkRequest
}

type forkRequest struct {
	cmd  *exec.Cmd
	done chan error
}

func start(cmd *exec.Cmd) error {
	forker.once.Do(func() {
		forker.reqs = make(chan forkRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: see forker
			for r := range forker.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	done := make(chan error, 1)
	forker.reqs <- forkRequest{cmd: cmd, done: done}
	return <-done
}
