package sqlitestore

import (
	"context"
	"runtime/pprof"
	"sync/atomic"
	"time"

	"github.com/agentchat/agentchat/internal/store"
)

// Every write passes through the one write connection, so it is the part of
// the store a busy node saturates first. The store counts how long each kind
// of work holds it (store.SerialWriter, exported as Prometheus counters by
// package telemetry), and labels the goroutine that holds it (pprof label
// "sqlite_writer") so that a CPU profile gives the writer's own CPU.

// writerPart indexes Store.busy.
type writerPart int

const (
	partEvents     writerPart = iota // the event log's batches (AppendEvents)
	partRuns                         // the group-committed writes of runs (group.go)
	partOther                        // every other transaction (Store.tx)
	partReads                        // reads the write connection serves (LastSeq)
	partCheckpoint                   // WAL checkpoints in the writer's turn (checkpoint.go)
	numParts
)

var partNames = [numParts]string{"events", "runs", "other", "reads", "checkpoint"}

// partLabels are the pprof labels of the goroutine holding the connection
// for each part.
var partLabels = func() (l [numParts]pprof.LabelSet) {
	for p := range numParts {
		l[p] = pprof.Labels("sqlite_writer", partNames[p])
	}
	return l
}()

// busyCount is one part's work: nanoseconds held, transactions, writes.
type busyCount struct {
	ns, txs, writes atomic.Int64
}

// held notes that the write connection was held for p since start, for one
// transaction carrying writes writes, and after a write transaction sees
// to the WAL's checkpoints (checkpoint.go).
func (s *Store) held(p writerPart, start time.Time, writes int) {
	c := &s.busy[p]
	c.ns.Add(int64(time.Since(start)))
	c.txs.Add(1)
	c.writes.Add(int64(writes))
	if p < partReads {
		s.committed()
	}
}

// labelled runs fn with the goroutine labelled as holding the write
// connection for p (the labels of ctx, the caller's, are restored after).
func labelled(ctx context.Context, p writerPart, fn func(context.Context)) {
	pprof.Do(ctx, partLabels[p], fn)
}

var _ store.SerialWriter = (*Store)(nil)

// WriterStats reports the write connection's work since Open.
func (s *Store) WriterStats() store.WriterStats {
	ps := s.write.Stats()
	out := store.WriterStats{Waited: ps.WaitDuration, Waits: ps.WaitCount, Parts: make([]store.WriterPart, numParts)}
	for p := range numParts {
		c := &s.busy[p]
		out.Parts[p] = store.WriterPart{Name: partNames[p], Busy: time.Duration(c.ns.Load()), Transactions: c.txs.Load(), Writes: c.writes.Load()}
	}
	return out
}
