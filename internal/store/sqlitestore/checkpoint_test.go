package sqlitestore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentchat/agentchat/internal/chat"
)

// walTest is a store with small WAL thresholds and one conversation whose
// title, rewritten, fills the WAL: a 64 KiB title is some 17 frames a
// write.
type walTest struct {
	s     *Store
	path  string
	sc    chat.Scope
	conv  chat.Conversation
	title int
}

func openWALTest(t *testing.T, wal walPolicy) *walTest {
	t.Helper()
	w := &walTest{path: filepath.Join(t.TempDir(), "agentchat.db"), sc: chat.Scope{Tenant: "t", User: "u"}}
	var err error
	if w.s, err = open(t.Context(), w.path, wal); err != nil {
		t.Fatal(err)
	}
	if w.conv, err = w.s.CreateConversation(t.Context(), w.sc, chat.Conversation{}); err != nil {
		t.Fatal(err)
	}
	return w
}

// write rewrites the title (one write transaction of the store's).
func (w *walTest) write(t *testing.T) string {
	t.Helper()
	w.title++
	title := strings.Repeat(string(rune('a'+w.title%26)), 64<<10)
	if _, err := w.s.UpdateConversation(t.Context(), w.sc, w.conv.ID, &title, nil); err != nil {
		t.Fatal(err)
	}
	return title
}

// walSize is the WAL file's size, 0 when there is none.
func (w *walTest) walSize(t *testing.T) int64 {
	t.Helper()
	fi, err := os.Stat(w.path + "-wal")
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// frameBytes is a WAL frame's size: a 4 KiB page and its 24-byte header.
const frameBytes = 4096 + 24

// Under continuous writes, with readers on every snapshot, the WAL never
// passes its cap by more than the transaction that took it there: the
// committer that sees it past the cap truncates it in the writer's turn,
// before its write returns. (A RESTART does not make the WAL file
// smaller: the bound holds for its size, the frames of the last write
// included.)
func TestWALStaysBoundedUnderWritesAndReads(t *testing.T) {
	t.Parallel()
	const walCap = 256
	w := openWALTest(t, walPolicy{checkpoint: 64, tail: 16, cap: walCap})
	defer w.s.Close()
	ctx, stop := context.WithCancel(t.Context())
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for ctx.Err() == nil {
				if _, err := w.s.GetConversation(ctx, w.sc, w.conv.ID); err != nil && ctx.Err() == nil {
					t.Error(err)
				}
			}
		})
	}
	// The WAL file, 32 bytes of header and its frames, stays within the
	// cap plus one write's frames (the most one write added to it),
	// whatever the checkpointer's goroutine has done.
	var largest, write int64
	prev := w.walSize(t) // the migrations'
	for range 20 * walCap / 17 {
		w.write(t)
		size := w.walSize(t)
		largest, write, prev = max(largest, size), max(write, size-prev), size
		if bound := 32 + walCap*frameBytes + write; size > bound {
			t.Fatalf("WAL is %d bytes, over %d (a write adds up to %d frames)", size, bound, write/frameBytes)
		}
	}
	stop()
	readers.Wait()
	t.Logf("largest WAL %d frames, cap %d, a write up to %d frames; checkpoints in the writer's turn: %d",
		(largest-32)/frameBytes, walCap, write/frameBytes, w.s.busy[partCheckpoint].txs.Load())
}

// Past the checkpoint threshold, and below the cap, the WAL is copied by
// the checkpointer's own connection, off the writer's turn: with no
// reader and no other write, its passive checkpoint copies every frame.
func TestWALCheckpointedOffTheWritersTurn(t *testing.T) {
	t.Parallel()
	passes := make(chan [2]int, 1)
	w := openWALTest(t, walPolicy{checkpoint: 64, tail: 16, cap: 1 << 30, passes: passes})
	defer w.s.Close()
	for range 64/17 + 1 {
		w.write(t)
	}
	if pass := <-passes; pass[1] != pass[0] {
		t.Errorf("passive checkpoint of a %d-frame WAL copied %d", pass[0], pass[1])
	}
}

// Close checkpoints the whole WAL into the database file, and what was
// written is there when the database is opened again.
func TestCloseCheckpointsAndDataSurvives(t *testing.T) {
	t.Parallel()
	w := openWALTest(t, walPolicy{checkpoint: 1 << 30, cap: 1 << 30}) // nothing checkpointed before Close
	var title string
	for range 8 {
		title = w.write(t)
	}
	if w.walSize(t) == 0 {
		t.Fatal("no WAL before Close")
	}
	if err := w.s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := w.s.busy[partCheckpoint].txs.Load(); n != 1 {
		t.Errorf("%d checkpoints at Close, want 1", n)
	}
	if size := w.walSize(t); size != 0 {
		t.Errorf("WAL of %d bytes after Close", size)
	}
	s, err := Open(t.Context(), w.path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.GetConversation(t.Context(), w.sc, w.conv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Title != title {
		t.Errorf("title after reopening is %d bytes of %q, want %d of %q", len(c.Title), c.Title[:1], len(title), title[:1])
	}
}
