package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// The WAL is checkpointed (its frames copied into the database, with an
// fsync of each) mostly off the write connection's turn. SQLite's own
// autocheckpoint runs in the connection whose commit takes the WAL past
// the threshold, while it is still that connection's turn: at a thousand
// streams and more, some 40 MiB copied and two fsyncs inside the event
// log's or the runs' commit, every other writer waiting (docs/benchmarks.md,
// "eleventh round"). So the write connection has wal_autocheckpoint(0), and
// after each of the store's write transactions (Store.tx, the event log's,
// the runs' group commit; held, busy.go) its committer reads how far the
// WAL has grown (the wal-index header, below: two integers, no lock, no
// query):
//
//   - past walCheckpointFrames in all, it wakes the checkpointer, a
//     goroutine with a read-write connection of its own, which runs
//     PASSIVE checkpoints: they copy what no reader still needs, never
//     wait for a lock, and the writer goes on appending meanwhile. It
//     repeats them while they make progress, until what is left is a
//     tail (walTailFrames, frames the writer committed during the last
//     one). Then it takes the write connection's turn for one
//     wal_checkpoint(RESTART) there: the tail copied, and the readers on
//     older snapshots (single queries) waited for, so that the next
//     transaction writes the WAL from its start again. SQLite would
//     restart it by itself after a passive checkpoint that copied all,
//     but only if no reader is on an older snapshot at the writer's next
//     commit and no commit came during that checkpoint: under load, that
//     was never (without this RESTART the WAL grew to its cap in every
//     loaded run).
//     RESTART leaves the WAL file as large as it grew: writing its
//     allocated blocks again is cheaper than growing a file TRUNCATE
//     emptied.
//   - past walCapFrames in all (the checkpointer fell behind: readers held
//     its passes back, or a writer's restart failed), the committer itself
//     takes the turn for one wal_checkpoint(TRUNCATE), after the
//     checkpointer's pass in flight. Holding the turn, no frame is
//     appended; TRUNCATE waits (busy_timeout, 10 s) for the readers on
//     older snapshots, then empties the WAL itself (RESTART leaves that to
//     the next writer, which can fail to). So the WAL stays under
//     walCapFrames plus what the writers waiting for the turn meanwhile
//     commit (a transaction each: every committer checks after its
//     commit). Where TRUNCATE cannot finish (a reader held on past
//     busy_timeout) the next commit tries again.
//
// Close runs a last TRUNCATE checkpoint, so the database file alone holds
// everything.
const (
	// walCheckpointFrames is the WAL's frames at which the checkpointer
	// starts: about 40 MiB of 4 KiB pages, SQLite's autocheckpoint
	// threshold before (a hot page is copied once per this many frames;
	// docs/benchmarks.md, "seventh round").
	walCheckpointFrames = 10000
	// walTailFrames is what passive checkpoints leave to the RESTART in the
	// writer's turn: about 2.5 MiB.
	walTailFrames = walCheckpointFrames / 16
	// walCapFrames is the WAL's bound in frames (about 160 MiB), past which
	// a committer runs a TRUNCATE.
	walCapFrames = 4 * walCheckpointFrames
	// maxPassivePasses bounds the passive checkpoints one wake-up runs.
	maxPassivePasses = 8
)

// walPolicy is when the WAL is checkpointed, in frames.
type walPolicy struct {
	checkpoint uint32 // in all, at which the checkpointer starts
	tail       uint32 // not yet copied, left to the RESTART in the writer's turn
	cap        uint32 // in all, past which a committer runs a TRUNCATE
	// passes, if not nil, is told of each passive checkpoint's outcome
	// (frames in the WAL, frames copied), or not if full (tests).
	passes chan<- [2]int
}

// checkpointer runs the passive checkpoints (see above).
type checkpointer struct {
	wal        walPolicy
	db         *sql.DB  // its own read-write connection
	shm        *os.File // the wal-index, read for the WAL's size
	kick       chan struct{}
	cancel     context.CancelFunc
	stopped    chan struct{}
	restarting sync.Mutex // one RESTART at a time
	// copying is held by each checkpoint: a checkpoint started while
	// another is running fails (SQLITE_BUSY) at once, whatever the
	// busy_timeout, so the RESTART waits here for a passive one to end.
	copying sync.Mutex
}

// openCheckpointer opens the checkpointer's connection on dsn and the
// wal-index of the database at path, now (keepOpen: the file descriptors
// a busy process may not have later).
func openCheckpointer(ctx context.Context, dsn, path string, wal walPolicy) (*checkpointer, error) {
	// A checkpoint copies frames through a buffer of its own, not the page
	// cache: this connection needs one of a few pages, and keeps it small
	// for the RSS.
	db, err := sql.Open("sqlite", dsn+cacheSize(checkpointCacheKiB))
	if err != nil {
		return nil, err
	}
	if err := keepOpen(ctx, db, 1); err != nil {
		db.Close()
		return nil, err
	}
	shm, err := os.Open(path + "-shm")
	if err != nil {
		db.Close()
		return nil, err
	}
	return &checkpointer{wal: wal, db: db, shm: shm, kick: make(chan struct{}, 1), stopped: make(chan struct{})}, nil
}

// walFrames reads the WAL's frames and those copied into the database
// from the wal-index (https://sqlite.org/walformat.html, 2.2): mxFrame at
// offset 16 of each of the header's two copies (48 bytes each), nBackfill
// at offset 96, in the machine's byte order. It takes no lock: a header
// being written has copies that differ, read as not known (false).
func (c *checkpointer) walFrames() (frames, copied uint32, ok bool) {
	var b [100]byte
	if _, err := c.shm.ReadAt(b[:], 0); err != nil {
		return 0, 0, false
	}
	if string(b[:48]) != string(b[48:96]) {
		return 0, 0, false
	}
	return binary.NativeEndian.Uint32(b[16:]), binary.NativeEndian.Uint32(b[96:]), true
}

// checkpoints runs the checkpointer's checkpoints when woken, until ctx
// ends.
func (s *Store) checkpoints(ctx context.Context) {
	c := s.ckpt
	defer close(c.stopped)
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		}
		last := -1
		for range maxPassivePasses {
			var busy, frames, copied int
			c.copying.Lock()
			err := c.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied)
			c.copying.Unlock()
			if err != nil {
				break // closing, or the next wake-up tries again
			}
			select {
			case c.wal.passes <- [2]int{frames, copied}:
			default:
			}
			// A tail left, or held back by a reader: the next commit's
			// check wakes it again if need be.
			if frames-copied <= int(c.wal.tail) || copied == last {
				break
			}
			last = copied
		}
		s.restartWAL(ctx, "RESTART", func(frames, copied uint32) bool {
			return frames >= c.wal.checkpoint && frames-copied <= c.wal.tail
		})
	}
}

// start starts s's checkpointer.
func (s *Store) startCheckpoints() {
	ctx, cancel := context.WithCancel(context.Background())
	s.ckpt.cancel = cancel
	go s.checkpoints(ctx)
}

// close stops the goroutine and closes the connection and the wal-index.
func (c *checkpointer) close() error {
	if c.cancel != nil {
		c.cancel()
		<-c.stopped
	}
	return errors.Join(c.db.Close(), c.shm.Close())
}

// committed is called after each write transaction, outside the write
// connection's turn: it wakes the checkpointer, or restarts the WAL in
// the writer's turn when past its cap.
func (s *Store) committed() {
	c := s.ckpt
	if c == nil { // migrations, before Open starts the checkpointer
		return
	}
	frames, _, ok := c.walFrames()
	switch {
	case !ok:
	case frames >= c.wal.cap:
		s.restartWAL(context.Background(), "TRUNCATE", func(frames, _ uint32) bool { return frames >= c.wal.cap })
	case frames >= c.wal.checkpoint:
		select {
		case c.kick <- struct{}{}:
		default: // awake already
		}
	}
}

// restartWAL runs wal_checkpoint(mode) in the write connection's turn if
// need(frames, copied) holds once the turn is had (need nil: always),
// counted as the writer's "checkpoint" part.
func (s *Store) restartWAL(ctx context.Context, mode string, need func(frames, copied uint32) bool) (err error) {
	c := s.ckpt
	// One at a time; a committer past the cap waits for the
	// checkpointer's, then finds the WAL restarted or not (need).
	c.restarting.Lock()
	defer c.restarting.Unlock()
	// Before the turn: the writers go on while a passive checkpoint ends.
	c.copying.Lock()
	defer c.copying.Unlock()
	labelled(ctx, partCheckpoint, func(ctx context.Context) {
		var conn *sql.Conn
		if conn, err = s.write.Conn(ctx); err != nil {
			return
		}
		defer conn.Close()
		if need != nil {
			if frames, copied, ok := c.walFrames(); !ok || !need(frames, copied) {
				return // restarted meanwhile
			}
		}
		defer s.held(partCheckpoint, time.Now(), 0)
		var busy, frames, copied int
		if err = conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(`+mode+`)`).Scan(&busy, &frames, &copied); err == nil && busy != 0 {
			err = fmt.Errorf("wal_checkpoint(%s): busy, %d of %d frames copied", mode, copied, frames)
		}
	})
	return interpret(err)
}
