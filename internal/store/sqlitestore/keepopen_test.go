package sqlitestore

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
)

// Every connection of both pools is open when Open returns, and stays open
// through bursts of concurrent reads: none is closed for idling and
// reopened later, which needs file descriptors a busy process may not have.
func TestConnectionsOpenAtStartAndKept(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "agentchat.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check := func(when string) {
		t.Helper()
		for name, st := range map[string]struct{ open, max, idleClosed, lifeClosed int64 }{
			"write":      {int64(s.write.Stats().OpenConnections), int64(s.write.Stats().MaxOpenConnections), s.write.Stats().MaxIdleClosed, s.write.Stats().MaxLifetimeClosed + s.write.Stats().MaxIdleTimeClosed},
			"read":       {int64(s.read.Stats().OpenConnections), int64(s.read.Stats().MaxOpenConnections), s.read.Stats().MaxIdleClosed, s.read.Stats().MaxLifetimeClosed + s.read.Stats().MaxIdleTimeClosed},
			"checkpoint": {int64(s.ckpt.db.Stats().OpenConnections), int64(s.ckpt.db.Stats().MaxOpenConnections), s.ckpt.db.Stats().MaxIdleClosed, s.ckpt.db.Stats().MaxLifetimeClosed + s.ckpt.db.Stats().MaxIdleTimeClosed},
		} {
			if st.open != st.max || st.idleClosed != 0 || st.lifeClosed != 0 {
				t.Errorf("%s: %s pool has %d of %d connections open, %d closed idle, %d closed for age", when, name, st.open, st.max, st.idleClosed, st.lifeClosed)
			}
		}
	}
	check("after Open")
	if s.MaxConns() != s.write.Stats().MaxOpenConnections+s.read.Stats().MaxOpenConnections+1 {
		t.Errorf("MaxConns %d", s.MaxConns())
	}
	for range 3 {
		var wg sync.WaitGroup
		for range 4 * s.read.Stats().MaxOpenConnections {
			wg.Go(func() {
				if err := s.Ping(context.Background()); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	check("after bursts of reads")
}
