// Package diskfile is the embedded file.Storage: one file per object under
// a directory (the data directory's files/), named by its key and spread
// over 256 subdirectories by the key's first two digits.
//
// A Put writes to a temporary file in the same directory tree, syncs it and
// renames it into place, so a crash leaves at most a temporary file (removed
// by the next Open of the storage), never a half object under a key.
package diskfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentchat/agentchat/internal/file"
)

const tmpDir = "tmp"

// Storage keeps objects under a directory.
type Storage struct {
	root string
}

var _ file.Storage = (*Storage)(nil)

// Open prepares the directory dir (creating it) and removes temporary files
// a crash left.
func Open(dir string) (*Storage, error) {
	if err := os.MkdirAll(filepath.Join(dir, tmpDir), 0o700); err != nil {
		return nil, fmt.Errorf("file storage %s: %w", dir, err)
	}
	entries, err := os.ReadDir(filepath.Join(dir, tmpDir))
	if err != nil {
		return nil, fmt.Errorf("file storage %s: %w", dir, err)
	}
	for _, e := range entries {
		_ = os.Remove(filepath.Join(dir, tmpDir, e.Name()))
	}
	return &Storage{root: dir}, nil
}

func (s *Storage) path(key string) string {
	return filepath.Join(s.root, key[:2], key)
}

// Put writes the object through a temporary file and a rename.
func (s *Storage) Put(ctx context.Context, key string, r io.Reader, size int64) (err error) {
	if err := file.CheckKey(key); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Join(s.root, tmpDir), "put-*")
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := file.CopyExactly(tmp, ctxReader{ctx, r}, size); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	dst := s.path(key)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// Open opens the object's file.
func (s *Storage) Open(_ context.Context, key string) (file.Object, error) {
	if err := file.CheckKey(key); err != nil {
		return nil, err
	}
	f, err := os.Open(s.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("open %s: %w", key, file.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", key, err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("open %s: %w", key, err)
	}
	return object{f, st.Size()}, nil
}

// Delete removes the object's file.
func (s *Storage) Delete(_ context.Context, key string) error {
	if err := file.CheckKey(key); err != nil {
		return err
	}
	if err := os.Remove(s.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// Close does nothing: no file stays open between calls.
func (s *Storage) Close() error { return nil }

type object struct {
	*os.File
	size int64
}

func (o object) Size() int64 { return o.size }

// ctxReader stops a copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
