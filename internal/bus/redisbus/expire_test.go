package redisbus

import (
	"fmt"
	"testing"
	"time"
)

// TestSweepExpireSeen: the publisher's record of refreshed EXPIREs is swept
// of keys due again only once it reaches its mark, which then moves to
// twice what is left, so a minute of more new threads than the mark does
// not make every pipeline walk them all.
func TestSweepExpireSeen(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	q := &publishQueue{expireSeen: map[string]time.Time{}, expireSweep: minExpireSweep}
	keys := 0
	add := func(n int, at time.Time) {
		for range n {
			keys++
			q.expireSeen[fmt.Sprint("k", keys)] = at
		}
	}
	add(minExpireSweep-1, now.Add(-2*expireEvery))
	q.sweepExpireSeen(now)
	if len(q.expireSeen) != minExpireSweep-1 {
		t.Fatalf("swept below the mark: %d left", len(q.expireSeen))
	}
	add(1, now)
	q.sweepExpireSeen(now)
	if len(q.expireSeen) != 1 || q.expireSweep != minExpireSweep {
		t.Fatalf("at the mark: %d left, next mark %d; want 1 and %d", len(q.expireSeen), q.expireSweep, minExpireSweep)
	}
	// A minute's worth of fresh keys past the mark: one sweep that keeps
	// them, then none until their number doubles.
	add(3*minExpireSweep, now)
	q.sweepExpireSeen(now)
	fresh := len(q.expireSeen)
	if q.expireSweep != 2*fresh {
		t.Fatalf("next mark %d with %d fresh keys, want %d", q.expireSweep, fresh, 2*fresh)
	}
	add(1, now.Add(-2*expireEvery))
	q.sweepExpireSeen(now)
	if len(q.expireSeen) != fresh+1 {
		t.Fatalf("swept again before the mark: %d left, want %d", len(q.expireSeen), fresh+1)
	}
}
