package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/agentchat/agentchat/internal/file"
)

// fileChunkSize is the most bytes one file_chunks row holds: large enough
// that a 20 MiB file is 80 rows, small enough that serving a Range holds
// one chunk in memory, not the file.
const fileChunkSize = 256 << 10

// FileStorage is the file.Storage that keeps uploaded files' bytes in the
// store's database (migration 0011), so replicas sharing PostgreSQL share
// files with nothing else to run. It uses the store's connections; closing
// it does nothing, closing the store ends it.
type FileStorage struct {
	s *Store
}

var _ file.Storage = (*FileStorage)(nil)

// FileStorage returns the file storage in this store's database.
func (s *Store) FileStorage() *FileStorage { return &FileStorage{s: s} }

// Put writes the object's row and then its chunks in one transaction. A
// Put racing another of the same key waits on the row, then finds it and
// writes nothing (the bytes are the same), still checking its body's size.
func (fs *FileStorage) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := file.CheckKey(key); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, fs.s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO file_objects (key, size, chunk_size) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING`, key, size, fileChunkSize)
		if err != nil {
			return interpretError(err)
		}
		if tag.RowsAffected() == 0 {
			return file.CopyExactly(io.Discard, r, size)
		}
		buf := make([]byte, fileChunkSize)
		left := size
		for n := 0; left > 0; n++ {
			m := int(min(left, fileChunkSize))
			got, err := io.ReadFull(r, buf[:m])
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return &file.SizeError{Want: size, Got: size - left + int64(got)}
			}
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO file_chunks (key, n, data) VALUES ($1, $2, $3)`, key, n, buf[:m]); err != nil {
				return interpretError(err)
			}
			left -= int64(m)
		}
		var one [1]byte
		if m, _ := io.ReadFull(r, one[:]); m > 0 {
			return &file.SizeError{Want: size, Got: size + 1}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// Open reads the object's row; its chunks are read as they are needed.
func (fs *FileStorage) Open(ctx context.Context, key string) (file.Object, error) {
	if err := file.CheckKey(key); err != nil {
		return nil, err
	}
	o := &fileObject{ctx: ctx, s: fs.s, key: key, chunk: -1}
	err := fs.s.pool.QueryRow(ctx, `SELECT size, chunk_size FROM file_objects WHERE key = $1`, key).Scan(&o.size, &o.chunkSize)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("open %s: %w", key, file.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", key, interpretError(err))
	}
	return o, nil
}

// Delete removes the object's row and, by the foreign key, its chunks.
func (fs *FileStorage) Delete(ctx context.Context, key string) error {
	if err := file.CheckKey(key); err != nil {
		return err
	}
	if _, err := fs.s.pool.Exec(ctx, `DELETE FROM file_objects WHERE key = $1`, key); err != nil {
		return fmt.Errorf("delete %s: %w", key, interpretError(err))
	}
	return nil
}

// Close does nothing: the store owns the connections.
func (fs *FileStorage) Close() error { return nil }

// fileObject reads an object one chunk at a time, keeping the last chunk
// read, so sequential reads cost one query per chunk and a Range one query
// per chunk it covers.
type fileObject struct {
	// ctx is the Open's: the reads belong to the request that opened the
	// object.
	ctx       context.Context
	s         *Store
	key       string
	size      int64
	chunkSize int64
	pos       int64
	chunk     int64 // index of data, -1 for none
	data      []byte
}

func (o *fileObject) Size() int64 { return o.size }

func (o *fileObject) Read(p []byte) (int, error) {
	if o.pos >= o.size {
		return 0, io.EOF
	}
	if want := o.pos / o.chunkSize; want != o.chunk {
		o.data = o.data[:0]
		err := o.s.pool.QueryRow(o.ctx, `SELECT data FROM file_chunks WHERE key = $1 AND n = $2`, o.key, want).Scan(&o.data)
		if errors.Is(err, pgx.ErrNoRows) {
			// Deleted since it was opened.
			return 0, fmt.Errorf("read %s: %w", o.key, file.ErrNotFound)
		}
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", o.key, interpretError(err))
		}
		o.chunk = want
	}
	off := o.pos - o.chunk*o.chunkSize
	if off >= int64(len(o.data)) {
		return 0, fmt.Errorf("read %s: chunk %d is short: %w", o.key, o.chunk, io.ErrUnexpectedEOF)
	}
	n := copy(p, o.data[off:])
	o.pos += int64(n)
	return n, nil
}

func (o *fileObject) Seek(offset int64, whence int) (int64, error) {
	pos, err := file.SeekTo(o.key, o.pos, o.size, offset, whence)
	if err != nil {
		return 0, err
	}
	o.pos = pos
	return pos, nil
}

func (o *fileObject) Close() error {
	o.data = nil
	return nil
}
