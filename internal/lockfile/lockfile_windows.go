//go:build windows

package lockfile

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// tryLock locks one byte far past the pid, so the pid stays readable by
// the process that is refused.
func tryLock(f *os.File) (held bool, err error) {
	ol := &windows.Overlapped{Offset: 0, OffsetHigh: 1}
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return true, nil
	}
	return false, err
}
