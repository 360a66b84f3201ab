//go:build unix

package fdbudget

import (
	"math"
	"syscall"
)

// Limit reads the open-files limit, first raising the soft limit to the
// hard one (Go does so at start on most systems; this covers the rest and
// a limit lowered since). 0 means unlimited.
func Limit() (soft, hard int, err error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0, err
	}
	if r.Cur < r.Max {
		raised := r
		raised.Cur = r.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			r = raised
		}
	}
	return clamp(r.Cur), clamp(r.Max), nil
}

func clamp(v uint64) int {
	if v > math.MaxInt32 { // RLIM_INFINITY, or more than any table holds
		return 0
	}
	return int(v)
}
