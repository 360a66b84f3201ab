package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeProc writes a proc file system holding process 42 with the given
// stat and status files.
func fakeProc(t *testing.T, stat, status string) procReader {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "42")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"stat": stat, "status": status} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := newProcReader(root, 42)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A stat line from Linux 6: the command name holds spaces and a
// parenthesis; utime is 250 ticks and stime 50.
const stat = "42 (agent chat) x) S 1 42 42 0 -1 4194560 9500 0 0 0 250 50 0 0 20 0 12 0 3046 1453936640 6000 " +
	"18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n"

const status = "Name:\tagentchat\nState:\tS (sleeping)\nVmPeak:\t 1419860 kB\nVmSize:\t 1419860 kB\n" +
	"VmHWM:\t   51234 kB\nVmRSS:\t   40960 kB\nRssAnon:\t   30000 kB\nRssFile:\t   10860 kB\nRssShmem:\t     100 kB\nThreads:\t12\n"

func TestProcReader(t *testing.T) {
	t.Parallel()
	r := fakeProc(t, stat, status)
	r.ticks = 250 // a kernel whose USER_HZ is not 100
	if ms, err := r.cpuMS(); err != nil || ms != 1200 {
		t.Errorf("cpuMS = %v, %v; want (250+50) ticks at 250 Hz = 1200 ms", ms, err)
	}
	if rss, peak, err := r.memory(); err != nil || rss != 40960 || peak != 51234 {
		t.Errorf("memory = %d, %d, %v; want 40960 and 51234 KiB", rss, peak, err)
	}
	if rss, anon, file, err := r.resident(); err != nil || rss != 40960 || anon != 30000 || file != 10960 {
		t.Errorf("resident = %d, %d, %d, %v; want 40960, 30000 and 10860+100 KiB", rss, anon, file, err)
	}
}

// A stat line that stops early is an error, never a panic.
func TestProcReaderShortLines(t *testing.T) {
	t.Parallel()
	for _, line := range []string{
		"42 (agentchat) S 1 42 42 0 -1 4194560 9500 0 0 0\n", // ends before utime
		"42 (agentchat)",  // ends at the command name
		"42 (agentchat) ", // and one space after it
		"42 agentchat",    // no command name
		"",
	} {
		r := fakeProc(t, line, "Name:\tagentchat\n")
		if _, err := r.cpuMS(); err == nil {
			t.Errorf("cpuMS of %q: no error", line)
		}
	}
}

// clockTicks is the kernel's, as getconf CLK_TCK reports it.
func TestClockTicks(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err != nil {
		t.Skipf("getconf CLK_TCK: %v", err)
	}
	want, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		t.Fatal(err)
	}
	if got := clockTicks(); got != want {
		t.Errorf("clockTicks() = %v, getconf CLK_TCK = %v", got, want)
	}
}

// The reader works on this process's own /proc entry.
func TestProcReaderSelf(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	r, err := newProcReader("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.cpuMS(); err != nil {
		t.Error(err)
	}
	if rss, peak, err := r.memory(); err != nil || rss <= 0 || peak < rss {
		t.Errorf("memory = %d, %d, %v", rss, peak, err)
	}
}
