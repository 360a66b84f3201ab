// Package lockfile keeps a resource, such as a data directory, to one
// process: Acquire takes an exclusive lock on a file and writes the
// process id in it, and a second Acquire, from any process, fails with a
// *HeldError naming the holder's pid.
//
// Invariants: the lock is the operating system's (flock on Unix, LockFileEx
// on Windows) on the open file, so it ends with the process however the
// process ends, kill -9 included, and a lock file left behind by a dead
// process is never mistaken for a live one. The file is never removed:
// removing it would let a third process lock a new file while the second
// still waits on the old one. The pid in the file is for people; the lock
// alone decides.
package lockfile

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Lock is a held lock file. Release it, or let the process end.
type Lock struct {
	f *os.File
}

// HeldError is Acquire's error when another process holds the lock.
type HeldError struct {
	// Path is the lock file.
	Path string
	// PID is the holder's process id as its file says, 0 if unreadable.
	PID int
}

func (e *HeldError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("%s is held by process %d", e.Path, e.PID)
	}
	return fmt.Sprintf("%s is held by another process", e.Path)
}

// Acquire takes path (creating it with mode 0644) for this process and
// writes the process id in it. It does not wait: a lock another process
// holds is a *HeldError at once.
func Acquire(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if held {
		defer f.Close()
		return nil, &HeldError{Path: path, PID: readPID(f)}
	}
	if err := writePID(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// Release gives the lock up. The file stays, with the last holder's pid.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor releases the lock
	l.f = nil
	return err
}

func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		return err
	}
	return f.Sync()
}

func readPID(f *os.File) int {
	buf := make([]byte, 32)
	n, err := f.ReadAt(buf, 0)
	if err != nil && n == 0 {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
