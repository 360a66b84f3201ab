package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/prometheus/procfs"
)

// procReader reads one server process's CPU time and memory from a proc
// file system. The files are parsed by procfs, which returns an error for
// a line it cannot read rather than index past its end; CPU ticks are
// converted with the system's clock tick (USER_HZ), not an assumed 100.
type procReader struct {
	proc  procfs.Proc
	dir   string  // the process's directory, for clear_refs
	ticks float64 // clock ticks per second
}

// newProcReader reads process pid under root (procfs.DefaultMountPoint
// outside tests).
func newProcReader(root string, pid int) (procReader, error) {
	fs, err := procfs.NewFS(root)
	if err != nil {
		return procReader{}, err
	}
	p, err := fs.Proc(pid)
	if err != nil {
		return procReader{}, err
	}
	return procReader{proc: p, dir: filepath.Join(root, strconv.Itoa(pid)), ticks: clockTicks()}, nil
}

// cpuMS is the process's user and system CPU time in milliseconds.
func (r procReader) cpuMS() (ms float64, err error) {
	// procfs (v0.23 too) slices past the end of a stat line that stops
	// right after the command name; a kernel never writes one, but a
	// measurement must not crash the benchmark.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("read %s/stat: %v", r.dir, p)
		}
	}()
	st, err := r.proc.Stat()
	if err != nil {
		return 0, fmt.Errorf("read %s/stat: %w", r.dir, err)
	}
	return float64(st.UTime+st.STime) * 1000 / r.ticks, nil
}

// listenOverflows is the machine's count of connections dropped for a full
// listen queue (TcpExt ListenOverflows, as the process's network namespace
// sees it).
func (r procReader) listenOverflows() (int64, error) {
	ns, err := r.proc.Netstat()
	if err != nil {
		return 0, fmt.Errorf("read %s/net/netstat: %w", r.dir, err)
	}
	if ns.ListenOverflows == nil {
		return 0, fmt.Errorf("%s/net/netstat: no ListenOverflows", r.dir)
	}
	return int64(*ns.ListenOverflows), nil
}

// memory is the process's resident set and its peak (VmRSS, VmHWM) in KiB.
func (r procReader) memory() (rss, peak int64, err error) {
	st, err := r.proc.NewStatus()
	if err != nil {
		return 0, 0, fmt.Errorf("read %s/status: %w", r.dir, err)
	}
	return int64(st.VmRSS / 1024), int64(st.VmHWM / 1024), nil
}

// resident is the process's resident set (VmRSS) and its two parts in KiB:
// anonymous memory (the heap, stacks, SQLite's page caches) and mapped
// files (the executable's pages, shared memory such as SQLite's WAL
// index). A file's pages come in as the process first touches them, so
// they grow as new code paths run, up to the executable's size, and the
// kernel can take them back under memory pressure.
func (r procReader) resident() (rss, anon, file int64, err error) {
	st, err := r.proc.NewStatus()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("read %s/status: %w", r.dir, err)
	}
	return int64(st.VmRSS / 1024), int64(st.RssAnon / 1024), int64((st.RssFile + st.RssShmem) / 1024), nil
}

// resetPeak clears VmHWM so the peak covers the load phase only. It
// needs the right to write clear_refs; without it the peak covers the
// process's life.
func (r procReader) resetPeak() {
	os.WriteFile(filepath.Join(r.dir, "clear_refs"), []byte("5"), 0)
}
