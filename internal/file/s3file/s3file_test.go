package s3file_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/agentchat/agentchat/internal/file"
	"github.com/agentchat/agentchat/internal/file/filetest"
	"github.com/agentchat/agentchat/internal/file/s3file"
)

// fakeS3 is an S3-compatible server on 127.0.0.1 with one empty bucket,
// recording the Range header of every GET it serves.
type fakeS3 struct {
	url     string
	backend *s3mem.Backend
	mu      sync.Mutex
	ranges  []string
}

func newFakeS3(t *testing.T, bucket string) *fakeS3 {
	t.Helper()
	f := &fakeS3{backend: s3mem.New()}
	h := gofakes3.New(f.backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Query().Get("x-id") == "GetObject" {
			f.mu.Lock()
			f.ranges = append(f.ranges, r.Header.Get("Range"))
			f.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	if err := f.backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	f.url = srv.URL
	return f
}

func (f *fakeS3) gets() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ranges)
}

func open(t *testing.T, f *fakeS3, bucket, prefix string) *s3file.Storage {
	t.Helper()
	s, err := s3file.Open(t.Context(), s3file.Config{Endpoint: f.url, Bucket: bucket, Prefix: prefix, Region: "us-east-1",
		AccessKeyID: "test-key", SecretAccessKey: "test-secret", PathStyle: true, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestContract(t *testing.T) {
	t.Parallel()
	filetest.Run(t, func(t *testing.T) file.Storage {
		return open(t, newFakeS3(t, "files"), "files", "")
	})
}

// A Range read fetches from its offset: a ranged GET, not the whole object.
func TestSeekFetchesFromTheOffset(t *testing.T) {
	t.Parallel()
	f := newFakeS3(t, "files")
	s := open(t, f, "files", "")
	b := bytes.Repeat([]byte("0123456789"), 100_000)
	key := filetest.Key(b)
	if err := s.Put(t.Context(), key, bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	o, err := s.Open(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if _, err := o.Seek(999_990, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(o)
	if err != nil || string(got) != "0123456789" {
		t.Fatalf("read %q, %v", got, err)
	}
	if gets := f.gets(); !slices.Equal(gets, []string{"bytes=999990-"}) {
		t.Fatalf("GETs with Range %q, want one from 999990", gets)
	}
}

// Prefixes keep deployments sharing a bucket apart; a deleted object is
// gone for its prefix only.
func TestPrefixesShareABucket(t *testing.T) {
	t.Parallel()
	f := newFakeS3(t, "shared")
	a, b := open(t, f, "shared", "a/"), open(t, f, "shared", "b/")
	body := []byte("the same bytes in two deployments")
	key := filetest.Key(body)
	ctx := t.Context()
	if err := a.Put(ctx, key, bytes.NewReader(body), int64(len(body))); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(ctx, key); !errors.Is(err, file.ErrNotFound) {
		t.Fatalf("b sees a's object: %v", err)
	}
	if err := b.Put(ctx, key, bytes.NewReader(body), int64(len(body))); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	o, err := b.Open(ctx, key)
	if err != nil {
		t.Fatalf("a's delete removed b's object: %v", err)
	}
	_ = o.Close()
	obj, err := f.backend.HeadObject("shared", "b/"+key)
	if err != nil || obj.Size != int64(len(body)) {
		t.Fatalf("object not at b/<key>: %v", err)
	}
}

// A bucket that does not exist fails Open, naming it.
func TestOpenChecksTheBucket(t *testing.T) {
	t.Parallel()
	f := newFakeS3(t, "files")
	_, err := s3file.Open(context.Background(), s3file.Config{Endpoint: f.url, Bucket: "missing", Region: "us-east-1",
		AccessKeyID: "k", SecretAccessKey: "s", PathStyle: true})
	if err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Fatalf("Open of a missing bucket = %v", err)
	}
	if _, err := s3file.Open(context.Background(), s3file.Config{Endpoint: f.url}); err == nil {
		t.Fatal("Open without a bucket succeeded")
	}
}
