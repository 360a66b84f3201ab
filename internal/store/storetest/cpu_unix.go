//go:build unix

package storetest

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the process has used: on a
// machine shared with other work, a fairer measure than elapsed time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
