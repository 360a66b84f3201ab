package file_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/file"
	"github.com/agentchat/agentchat/internal/file/diskfile"
	"github.com/agentchat/agentchat/internal/file/filetest"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/sqlitestore"
)

// Sweep, at the time it is given (the clock is the caller's, so nothing
// sleeps), removes the files only a deleted conversation referenced at
// once and uploads never sent once the retention has passed; content
// another record shares stays until the last one goes.
func TestSweepRemovesUnreferencedFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlitestore.Open(ctx, filepath.Join(dir, "agentchat.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	storage, err := diskfile.Open(filepath.Join(dir, "files"))
	if err != nil {
		t.Fatal(err)
	}
	const retention = time.Hour
	svc := file.NewService(file.Config{Store: st, Storage: storage, Retention: retention, TempDir: t.TempDir()})
	alice := chat.Scope{Tenant: "acme", User: "alice"}
	upload := func(name, body string) store.File {
		t.Helper()
		f, err := svc.CreateBytes(ctx, alice, name, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	stored := func(body string) bool {
		t.Helper()
		o, err := storage.Open(ctx, filetest.Key([]byte(body)))
		if errors.Is(err, file.ErrNotFound) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		_ = o.Close()
		return true
	}
	sweep := func(at time.Time, want int) {
		t.Helper()
		n, err := svc.Sweep(ctx, at)
		if err != nil || n != want {
			t.Fatalf("sweep at %v removed %d (%v), want %d", at, n, err, want)
		}
	}
	exists := func(f store.File, want bool) {
		t.Helper()
		_, err := svc.Get(ctx, alice, f.ID)
		if got := err == nil; got != want || err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s exists = %v (%v), want %v", f.Name, got, err, want)
		}
	}

	c1, err := st.CreateConversation(ctx, alice, chat.Conversation{})
	if err != nil {
		t.Fatal(err)
	}
	c2, err := st.CreateConversation(ctx, alice, chat.Conversation{})
	if err != nil {
		t.Fatal(err)
	}
	onlyC1 := upload("only.txt", "sent in c1 only")
	both := upload("both.txt", "sent in both")
	unsent := upload("unsent.txt", "never sent")
	copyOfOnly := upload("copy.txt", "sent in c1 only") // same bytes, never sent
	if err := st.ReferenceFiles(ctx, alice, c1.ID, []string{onlyC1.ID, both.ID}); err != nil {
		t.Fatal(err)
	}
	if err := st.ReferenceFiles(ctx, alice, c2.ID, []string{both.ID}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	sweep(now, 0)

	// c1 goes: the file only it sent goes at once, its bytes stay for the
	// unsent copy; the file c2 also sent stays.
	if err := st.DeleteConversation(ctx, alice, c1.ID); err != nil {
		t.Fatal(err)
	}
	sweep(now, 1)
	exists(onlyC1, false)
	exists(both, true)
	if !stored("sent in c1 only") {
		t.Fatal("bytes another record shares were deleted")
	}

	// Unsent uploads are kept within the retention, removed after it.
	sweep(now.Add(retention-time.Minute), 0)
	exists(unsent, true)
	sweep(now.Add(retention+time.Minute), 2)
	exists(unsent, false)
	exists(copyOfOnly, false)
	if stored("never sent") || stored("sent in c1 only") {
		t.Fatal("bytes of swept files remain")
	}
	if !stored("sent in both") {
		t.Fatal("bytes of a file c2 sent were deleted")
	}

	// The last conversation goes: so does its file, whatever the time.
	if err := st.DeleteConversation(ctx, alice, c2.ID); err != nil {
		t.Fatal(err)
	}
	sweep(now, 1)
	if stored("sent in both") {
		t.Fatal("bytes of the last file remain")
	}
}
