package file

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// Defaults of Config.
const (
	DefaultMaxBytes    = 20 << 20
	DefaultTenantQuota = 1 << 30
	DefaultRetention   = 24 * time.Hour
)

// Config configures a Service. Zero values mean the defaults.
type Config struct {
	Store   store.Files
	Storage Storage
	// MaxBytes is the largest file; default DefaultMaxBytes.
	MaxBytes int64
	// Types are the media types an upload may have; default DefaultTypes.
	Types []string
	// TenantQuota bounds the bytes of a tenant's files; default
	// DefaultTenantQuota, -1 for none.
	TenantQuota int64
	// Retention is how long an upload no message references is kept;
	// default DefaultRetention.
	Retention time.Duration
	// TempDir holds uploads while they arrive; default os.TempDir().
	TempDir string
	// Fetch fetches the http(s) URLs clients give for files (FromURL); it
	// must refuse private addresses (builtin.GuardedClient). Nil fetches none.
	Fetch  *http.Client
	Logger *slog.Logger
}

// Service uploads, reads and deletes files: records in the store, bytes
// in a Storage. Safe for concurrent use.
type Service struct {
	cfg Config
	log *slog.Logger
}

// NewService makes a Service.
func NewService(cfg Config) *Service {
	cfg.MaxBytes = cmp.Or(cfg.MaxBytes, DefaultMaxBytes)
	cfg.TenantQuota = cmp.Or(cfg.TenantQuota, DefaultTenantQuota)
	cfg.Retention = cmp.Or(cfg.Retention, DefaultRetention)
	if len(cfg.Types) == 0 {
		cfg.Types = DefaultTypes
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, log: log}
}

// MaxBytes is the largest file the service takes.
func (s *Service) MaxBytes() int64 { return s.cfg.MaxBytes }

// Errors an upload is refused with; each says what to do in its message.
type (
	// TooLargeError: the file is over the size limit.
	TooLargeError struct{ Limit int64 }
	// TypeError: the file's sniffed media type is not allowed.
	TypeError struct {
		MediaType string
		Allowed   []string
	}
	// QuotaError: the tenant's storage quota would be exceeded.
	QuotaError struct{ Quota, Used, Size int64 }
)

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the file is larger than the limit of %d bytes", e.Limit)
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("files of type %s cannot be uploaded; allowed: %v", e.MediaType, e.Allowed)
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("the tenant's file storage is full: %d of %d bytes used, and this file has %d", e.Used, e.Quota, e.Size)
}

// Upload is a file arriving.
type Upload struct {
	// Name is the client's file name (cleaned by CleanName).
	Name string
	Body io.Reader
	// Size, when known (a Content-Length), lets an oversized upload be
	// refused before a byte is read; -1 when unknown.
	Size int64
}

// Create stores an upload for sc: it reads the body (refusing it once past
// MaxBytes, so nothing oversized is kept), sniffs its media type, checks
// the tenant's quota, then writes the record and the bytes. A refused or
// failed upload stores nothing.
func (s *Service) Create(ctx context.Context, sc chat.Scope, up Upload) (store.File, error) {
	if up.Size > s.cfg.MaxBytes {
		return store.File{}, &TooLargeError{Limit: s.cfg.MaxBytes}
	}
	tmp, err := os.CreateTemp(s.cfg.TempDir, "agentchat-upload-*")
	if err != nil {
		return store.File{}, fmt.Errorf("upload: %w", err)
	}
	defer func() {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
	}()
	h := sha256.New()
	head := &headWriter{max: 512}
	n, err := io.Copy(io.MultiWriter(tmp, h, head), io.LimitReader(up.Body, s.cfg.MaxBytes+1))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return store.File{}, &TooLargeError{Limit: s.cfg.MaxBytes}
		}
		return store.File{}, fmt.Errorf("upload: reading the body: %w", err)
	}
	if n > s.cfg.MaxBytes {
		return store.File{}, &TooLargeError{Limit: s.cfg.MaxBytes}
	}
	name := CleanName(up.Name)
	mt := Sniff(head.buf, name)
	if !slices.Contains(s.cfg.Types, mt) {
		return store.File{}, &TypeError{MediaType: mt, Allowed: s.cfg.Types}
	}
	if name == unnamed {
		// A part that came without a name (an AG-UI image or document) is
		// named for its type, so a model reading "file.pdf" knows what it is.
		name += extensions[mt]
	}
	if s.cfg.TenantQuota > 0 {
		used, err := s.cfg.Store.TenantFileBytes(ctx, sc.Tenant)
		if err != nil {
			return store.File{}, err
		}
		if used+n > s.cfg.TenantQuota {
			return store.File{}, &QuotaError{Quota: s.cfg.TenantQuota, Used: used, Size: n}
		}
	}
	sum := hex.EncodeToString(h.Sum(nil))
	// The record first, then the bytes: a delete racing on the same content
	// sees the record and keeps the object (FileContentInUse).
	f, err := s.cfg.Store.CreateFile(ctx, sc, store.File{Name: name, MediaType: mt, Size: n, SHA256: sum})
	if err != nil {
		return store.File{}, err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err == nil {
		err = s.cfg.Storage.Put(ctx, sum, tmp, n)
	}
	if err != nil {
		if _, derr := s.cfg.Store.DeleteFile(context.WithoutCancel(ctx), sc, f.ID); derr != nil {
			s.log.WarnContext(ctx, "file record left without content", "file_id", f.ID, "err", derr)
		}
		return store.File{}, fmt.Errorf("upload: storing the content: %w", err)
	}
	return f, nil
}

// CreateBytes stores b as an upload (a data: URL's or a fetched URL's bytes).
func (s *Service) CreateBytes(ctx context.Context, sc chat.Scope, name string, b []byte) (store.File, error) {
	return s.Create(ctx, sc, Upload{Name: name, Body: bytes.NewReader(b), Size: int64(len(b))})
}

// Get reads one of sc's files' record.
func (s *Service) Get(ctx context.Context, sc chat.Scope, id string) (store.File, error) {
	return s.cfg.Store.GetFile(ctx, sc, id)
}

// List pages sc's files, newest first.
func (s *Service) List(ctx context.Context, sc chat.Scope, p store.Page) ([]store.File, string, error) {
	return s.cfg.Store.ListFiles(ctx, sc, p)
}

// Open returns one of sc's files with its content, which the caller closes.
func (s *Service) Open(ctx context.Context, sc chat.Scope, id string) (store.File, Object, error) {
	f, err := s.cfg.Store.GetFile(ctx, sc, id)
	if err != nil {
		return store.File{}, nil, err
	}
	o, err := s.cfg.Storage.Open(ctx, f.SHA256)
	if errors.Is(err, ErrNotFound) {
		return store.File{}, nil, fmt.Errorf("file %s: content missing: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.File{}, nil, err
	}
	return f, o, nil
}

// Read returns one of sc's files with all its bytes.
func (s *Service) Read(ctx context.Context, sc chat.Scope, id string) (store.File, []byte, error) {
	f, o, err := s.Open(ctx, sc, id)
	if err != nil {
		return store.File{}, nil, err
	}
	defer o.Close()
	b, err := io.ReadAll(io.LimitReader(o, s.cfg.MaxBytes+1))
	if err != nil {
		return store.File{}, nil, fmt.Errorf("read file %s: %w", id, err)
	}
	return f, b, nil
}

// Delete removes one of sc's files, and its content unless another record shares it.
func (s *Service) Delete(ctx context.Context, sc chat.Scope, id string) error {
	f, err := s.cfg.Store.DeleteFile(ctx, sc, id)
	if err != nil {
		return err
	}
	s.release(ctx, f)
	return nil
}

// release deletes a deleted record's content when no record shares it.
func (s *Service) release(ctx context.Context, f store.File) {
	inUse, err := s.cfg.Store.FileContentInUse(ctx, f.SHA256)
	if err == nil && !inUse {
		err = s.cfg.Storage.Delete(ctx, f.SHA256)
	}
	if err != nil {
		s.log.WarnContext(ctx, "file content not released", "file_id", f.ID, "err", err)
	}
}

// Sweep removes files no conversation references any more, and uploads no
// message referenced within the retention; it returns how many.
func (s *Service) Sweep(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for range 100 { // bounded: 100 batches of 100 per sweep
		files, err := s.cfg.Store.SweepFiles(ctx, now.Add(-s.cfg.Retention), 100)
		if err != nil {
			return total, err
		}
		for _, f := range files {
			s.release(ctx, f)
		}
		total += len(files)
		if len(files) < 100 {
			break
		}
	}
	return total, nil
}

// headWriter keeps the first max bytes written to it.
type headWriter struct {
	buf []byte
	max int
}

func (h *headWriter) Write(p []byte) (int, error) {
	if room := h.max - len(h.buf); room > 0 {
		h.buf = append(h.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// NoTextError: a file holds no text that can be indexed: an image or
// another type that is not text, or a PDF whose text cannot be read
// (encrypted, malformed, scanned pages only).
type NoTextError struct {
	MediaType string
	Err       error // the PDF reader's error; nil for a type that is not text
}

func (e *NoTextError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("no text could be read from this PDF (%v)", e.Err)
	}
	return fmt.Sprintf("a %s file holds no text to index; give a PDF or a text file", e.MediaType)
}

func (e *NoTextError) Unwrap() error { return e.Err }

// Text returns one of sc's files with its text, at most maxChars
// characters of it: a PDF's extracted text, a text file's own (invalid
// UTF-8 dropped). Any other type is a *NoTextError.
func (s *Service) Text(ctx context.Context, sc chat.Scope, id string, maxChars int) (store.File, string, error) {
	f, err := s.Get(ctx, sc, id)
	if err != nil {
		return store.File{}, "", err
	}
	kind := KindOf(f.MediaType)
	if kind != KindDocument && kind != KindText {
		return store.File{}, "", &NoTextError{MediaType: f.MediaType}
	}
	f, b, err := s.Read(ctx, sc, id)
	if err != nil {
		return store.File{}, "", err
	}
	if kind == KindDocument {
		text, err := PDFText(b, maxChars)
		if err != nil {
			return store.File{}, "", &NoTextError{MediaType: f.MediaType, Err: err}
		}
		return f, text, nil
	}
	text := strings.ToValidUTF8(string(b), "")
	if utf8.RuneCountInString(text) > maxChars {
		text = string([]rune(text)[:maxChars])
	}
	return f, text, nil
}
