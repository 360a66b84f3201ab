// Package filetest is the contract every file.Storage backend must pass.
package filetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/agentchat/agentchat/internal/file"
)

// Run runs the contract against storages made by newStorage; each call
// returns an empty, independent storage.
func Run(t *testing.T, newStorage func(t *testing.T) file.Storage) {
	tests := []struct {
		name string
		fn   func(*testing.T, file.Storage)
	}{
		{"PutOpenRoundTrip", testRoundTrip},
		{"Seek", testSeek},
		{"PutTwice", testPutTwice},
		{"MissingIsNotFound", testMissing},
		{"DeleteIsIdempotent", testDelete},
		{"WrongSizeStoresNothing", testWrongSize},
		{"CancelledPutStoresNothing", testCancelled},
		{"InvalidKeysRefused", testInvalidKeys},
		{"EmptyObject", testEmpty},
		{"ConcurrentPuts", testConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStorage(t))
		})
	}
}

// Key returns b's content address.
func Key(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func put(t *testing.T, s file.Storage, b []byte) string {
	t.Helper()
	key := Key(b)
	if err := s.Put(context.Background(), key, bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatalf("put: %v", err)
	}
	return key
}

func read(t *testing.T, s file.Storage, key string) []byte {
	t.Helper()
	o, err := s.Open(context.Background(), key)
	if err != nil {
		t.Fatalf("open %s: %v", key, err)
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	if o.Size() != int64(len(b)) {
		t.Fatalf("Size() = %d, read %d bytes", o.Size(), len(b))
	}
	return b
}

func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

func testRoundTrip(t *testing.T, s file.Storage) {
	for _, n := range []int{1, 1000, 3 << 20} {
		b := payload(n)
		key := put(t, s, b)
		if got := read(t, s, key); !bytes.Equal(got, b) {
			t.Fatalf("%d bytes: read back different bytes", n)
		}
	}
}

func testSeek(t *testing.T, s file.Storage) {
	b := payload(100_000)
	key := put(t, s, b)
	o, err := s.Open(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for _, c := range []struct {
		off    int64
		whence int
		want   int64
	}{{50_000, io.SeekStart, 50_000}, {-10, io.SeekEnd, 99_990}, {-100, io.SeekCurrent, 99_890}, {0, io.SeekStart, 0}} {
		pos, err := o.Seek(c.off, c.whence)
		if err != nil || pos != c.want {
			t.Fatalf("Seek(%d, %d) = %d, %v; want %d", c.off, c.whence, pos, err, c.want)
		}
		got := make([]byte, 10)
		if _, err := io.ReadFull(o, got); err != nil {
			t.Fatalf("read after seek to %d: %v", pos, err)
		}
		if !bytes.Equal(got, b[pos:pos+10]) {
			t.Fatalf("bytes after seek to %d differ", pos)
		}
		if _, err := o.Seek(pos, io.SeekStart); err != nil {
			t.Fatal(err)
		}
	}
	if end, err := o.Seek(0, io.SeekEnd); err != nil || end != int64(len(b)) {
		t.Fatalf("Seek to end = %d, %v", end, err)
	}
	if n, err := o.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("read at end = %d, %v; want 0, EOF", n, err)
	}
}

func testPutTwice(t *testing.T, s file.Storage) {
	b := []byte("the same bytes, twice")
	put(t, s, b)
	key := put(t, s, b)
	if got := read(t, s, key); !bytes.Equal(got, b) {
		t.Fatal("second put changed the object")
	}
}

func testMissing(t *testing.T, s file.Storage) {
	_, err := s.Open(context.Background(), Key([]byte("never stored")))
	if !errors.Is(err, file.ErrNotFound) {
		t.Fatalf("open missing = %v, want ErrNotFound", err)
	}
}

func testDelete(t *testing.T, s file.Storage) {
	ctx := context.Background()
	key := put(t, s, []byte("to delete"))
	for i := range 2 {
		if err := s.Delete(ctx, key); err != nil {
			t.Fatalf("delete #%d: %v", i+1, err)
		}
	}
	if _, err := s.Open(ctx, key); !errors.Is(err, file.ErrNotFound) {
		t.Fatalf("open deleted = %v, want ErrNotFound", err)
	}
	// Another object is untouched by the delete.
	other := put(t, s, []byte("kept"))
	if err := s.Delete(ctx, Key([]byte("never stored"))); err != nil {
		t.Fatal(err)
	}
	if got := read(t, s, other); string(got) != "kept" {
		t.Fatalf("other object = %q", got)
	}
}

func testWrongSize(t *testing.T, s file.Storage) {
	ctx := context.Background()
	b := []byte("twelve bytes")
	key := Key(b)
	for _, size := range []int64{int64(len(b)) + 5, int64(len(b)) - 5} {
		err := s.Put(ctx, key, bytes.NewReader(b), size)
		var se *file.SizeError
		if !errors.As(err, &se) {
			t.Fatalf("put %d bytes announced as %d = %v, want *file.SizeError", len(b), size, err)
		}
		if _, err := s.Open(ctx, key); !errors.Is(err, file.ErrNotFound) {
			t.Fatalf("after a failed put, open = %v; want ErrNotFound", err)
		}
	}
}

// failingReader gives some bytes, then fails, as a dropped upload does.
type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("connection reset")
	}
	m := min(len(p), f.n)
	clear(p[:m])
	f.n -= m
	return m, nil
}

func testCancelled(t *testing.T, s file.Storage) {
	ctx := context.Background()
	key := Key([]byte("never completes"))
	if err := s.Put(ctx, key, &failingReader{n: 64 << 10}, 1<<20); err == nil {
		t.Fatal("put of a failing body succeeded")
	}
	if _, err := s.Open(ctx, key); !errors.Is(err, file.ErrNotFound) {
		t.Fatalf("after a failed body, open = %v; want ErrNotFound", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	b := []byte("cancelled")
	if err := s.Put(cctx, Key(b), bytes.NewReader(b), int64(len(b))); err == nil {
		t.Fatal("put with a cancelled context succeeded")
	}
	if _, err := s.Open(ctx, Key(b)); !errors.Is(err, file.ErrNotFound) {
		t.Fatalf("after a cancelled put, open = %v; want ErrNotFound", err)
	}
}

func testInvalidKeys(t *testing.T, s file.Storage) {
	ctx := context.Background()
	for _, key := range []string{"", "../../etc/passwd", "ab/../../x", strings.Repeat("A", 64), strings.Repeat("a", 63), strings.Repeat("a", 63) + "/"} {
		if err := s.Put(ctx, key, strings.NewReader("x"), 1); err == nil {
			t.Errorf("put key %q succeeded", key)
		}
		if _, err := s.Open(ctx, key); err == nil {
			t.Errorf("open key %q succeeded", key)
		}
		if err := s.Delete(ctx, key); err == nil {
			t.Errorf("delete key %q succeeded", key)
		}
	}
}

func testEmpty(t *testing.T, s file.Storage) {
	key := put(t, s, nil)
	if got := read(t, s, key); len(got) != 0 {
		t.Fatalf("empty object read %d bytes", len(got))
	}
}

func testConcurrent(t *testing.T, s file.Storage) {
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := payload(10_000 + i%4) // four distinct objects, each put four times
			if err := s.Put(context.Background(), Key(b), bytes.NewReader(b), int64(len(b))); err != nil {
				errs <- fmt.Errorf("put %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range 4 {
		b := payload(10_000 + i)
		if got := read(t, s, Key(b)); !bytes.Equal(got, b) {
			t.Fatalf("object %d differs after concurrent puts", i)
		}
	}
}
