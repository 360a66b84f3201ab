//go:build unix

package bench

import "golang.org/x/sys/unix"

// atClockTick is AT_CLKTCK, the auxiliary vector entry in which the kernel
// tells every process its clock tick (linux/auxvec.h).
const atClockTick = 17

// clockTicks is the clock tick the kernel counts CPU time in (USER_HZ),
// read as sysconf(_SC_CLK_TCK) reads it: from the auxiliary vector. 100,
// the value on every common architecture, when the vector lacks it.
func clockTicks() float64 {
	auxv, err := unix.Auxv()
	if err != nil {
		return 100
	}
	for _, kv := range auxv {
		if kv[0] == atClockTick && kv[1] > 0 {
			return float64(kv[1])
		}
	}
	return 100
}
