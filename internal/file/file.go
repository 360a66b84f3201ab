package file

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// ErrNotFound: no object has the key.
var ErrNotFound = errors.New("file not found")

// Storage holds file contents by key. See the package comment for the
// contract; filetest.Run checks it.
type Storage interface {
	// Put stores size bytes read from r under key. A body shorter or
	// longer than size is an error and stores nothing.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Open returns the object for reading. The caller closes it.
	Open(ctx context.Context, key string) (Object, error)
	// Delete removes the object; a missing one is not an error.
	Delete(ctx context.Context, key string) error
	// Close releases the backend.
	Close() error
}

// Object is an open stored object: readable and seekable (for Range
// requests), with its size known up front.
type Object interface {
	io.ReadSeekCloser
	Size() int64
}

// ValidKey reports whether key is a content address: 64 lowercase hex digits.
func ValidKey(key string) bool {
	if len(key) != 64 {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// CheckKey returns an error naming key when it is not a content address.
func CheckKey(key string) error {
	if !ValidKey(key) {
		return fmt.Errorf("invalid file key %q: want a lowercase hex SHA-256", key)
	}
	return nil
}

// SizeError: a Put's body did not have the size announced.
type SizeError struct{ Want, Got int64 }

func (e *SizeError) Error() string {
	if e.Got > e.Want {
		return fmt.Sprintf("file body is longer than the %d bytes announced", e.Want)
	}
	return fmt.Sprintf("file body has %d bytes, not the %d announced", e.Got, e.Want)
}

// CopyExactly copies exactly size bytes from r to w and fails with
// *SizeError when r holds fewer or more; backends use it in Put.
func CopyExactly(w io.Writer, r io.Reader, size int64) error {
	n, err := io.Copy(w, io.LimitReader(r, size))
	if err != nil {
		return err
	}
	if n < size {
		return &SizeError{Want: size, Got: n}
	}
	var one [1]byte
	if m, _ := io.ReadFull(r, one[:]); m > 0 {
		return &SizeError{Want: size, Got: size + 1}
	}
	return nil
}

// SeekTo is the position an Object of size at pos moves to by
// Seek(offset, whence); key names it in errors. Backends call it from Seek.
func SeekTo(key string, pos, size, offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += pos
	case io.SeekEnd:
		offset += size
	default:
		return 0, fmt.Errorf("seek %s: invalid whence %d", key, whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("seek %s: negative position %d", key, offset)
	}
	return offset, nil
}
