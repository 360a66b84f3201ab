package file_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/file"
	"github.com/agentchat/agentchat/internal/file/diskfile"
	"github.com/agentchat/agentchat/internal/file/filetest"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/sqlitestore"
)

// A file's text, for the knowledge base: a PDF's extracted, a text file's
// own, cut at the limit; an image or an unreadable PDF has none.
func TestText(t *testing.T) {
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
	svc := file.NewService(file.Config{Store: st, Storage: storage, TempDir: t.TempDir()})
	alice, bob := chat.Scope{Tenant: "acme", User: "alice"}, chat.Scope{Tenant: "acme", User: "bob"}
	upload := func(name string, b []byte) string {
		t.Helper()
		f, err := svc.CreateBytes(ctx, alice, name, b)
		if err != nil {
			t.Fatal(err)
		}
		return f.ID
	}
	pdf := upload("handbook.pdf", filetest.PDF("Returns are accepted within thirty days.", "Shipping is free (over 50 euros)."))
	f, text, err := svc.Text(ctx, alice, pdf, 1000)
	if err != nil || f.Name != "handbook.pdf" || !strings.Contains(text, "Returns are accepted within thirty days.") || !strings.Contains(text, "(over 50 euros)") {
		t.Fatalf("pdf text %q, %v", text, err)
	}
	md := upload("notes.md", []byte("# Notes\nçà va"))
	if _, text, err := svc.Text(ctx, alice, md, 9); err != nil || text != "# Notes\nç" {
		t.Fatalf("text cut at 9 characters: %q, %v", text, err)
	}
	png := upload("cat.png", append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 40)...))
	var nt *file.NoTextError
	if _, _, err := svc.Text(ctx, alice, png, 1000); !errors.As(err, &nt) || nt.MediaType != "image/png" {
		t.Fatalf("image: %v", err)
	}
	broken := upload("broken.pdf", []byte("%PDF-1.4\nnot really a pdf"))
	if _, _, err := svc.Text(ctx, alice, broken, 1000); !errors.As(err, &nt) || nt.Err == nil {
		t.Fatalf("unreadable pdf: %v", err)
	}
	if _, _, err := svc.Text(ctx, bob, pdf, 1000); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another user's file: %v", err)
	}
}
