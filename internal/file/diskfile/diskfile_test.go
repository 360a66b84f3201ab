package diskfile_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentchat/agentchat/internal/file"
	"github.com/agentchat/agentchat/internal/file/diskfile"
	"github.com/agentchat/agentchat/internal/file/filetest"
)

func TestContract(t *testing.T) {
	filetest.Run(t, func(t *testing.T) file.Storage {
		s, err := diskfile.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// A crash mid-put leaves a temporary file, never an object; reopening the
// storage removes it.
func TestCrashLeavesNoHalfFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := diskfile.Open(dir); err != nil {
		t.Fatal(err)
	}
	half := filepath.Join(dir, "tmp", "put-123")
	if err := os.WriteFile(half, []byte("half an upload"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := diskfile.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(half); !os.IsNotExist(err) {
		t.Fatalf("temporary file survived reopening: %v", err)
	}
	b := []byte("whole")
	key := filetest.Key(b)
	if err := s.Put(context.Background(), key, bytes.NewReader(b), 5); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, key[:2], key)); err != nil {
		t.Fatalf("object not at its content address: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "tmp"))
	if len(entries) != 0 {
		t.Fatalf("put left %d temporary files", len(entries))
	}
}
