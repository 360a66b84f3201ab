package transport

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
)

// chunked reads a chunked response body (RFC 9112 §7.1) straight from its
// connection through a read buffer it holds only while the buffer has bytes
// not yet read. A provider stream spends most of its life waiting for the
// next token; net/http's reader (a bufio.Reader under its chunked decoder)
// holds its 4 KiB through every wait, 4 MiB at a thousand streams, counted
// twice by the collector's headroom. Here the wait is for readability
// alone (readable), and a pooled buffer is borrowed for the read that
// follows and given back once its bytes were delivered, which at a token
// per read is the same read.
//
// Framing is net/http's: a chunk's size in hex with extensions ignored,
// its data and CRLF, the last chunk of size 0 and trailer fields (read and
// dropped: a response that declares trailers is read by net/http instead,
// see roundTrip) up to an empty line. A read returns what it has copied
// rather than wait for more.
type chunked struct {
	nc   net.Conn
	wait func() // waits until nc can be read; nil where it cannot be told
	pool *sync.Pool

	buf  *[]byte // nil while nothing is buffered
	r, w int     // the unread bytes are (*buf)[r:w]
	left int64   // bytes of the current chunk's data not yet read
	st   chunkState
	err  error // a read's error that came with bytes, reported next
}

type chunkState uint8

const (
	chunkSize    chunkState = iota // a chunk-size line is next
	chunkData                      // left bytes of data, then CRLF
	chunkCRLF                      // the CRLF after a chunk's data
	chunkTrailer                   // trailer lines, up to an empty one
	chunkEnd                       // the body was read to its end
)

var (
	errChunkSize = errors.New("transport: malformed chunk size")
	errChunkEnd  = errors.New("transport: malformed chunk end (no CRLF after its data)")
	errLongLine  = errors.New("transport: chunk header line too long")
)

// newChunked returns the reader of a chunked body whose first bytes, if
// any, are rest (what the head's reader had buffered past the head).
func newChunked(nc net.Conn, pool *sync.Pool, rest []byte) *chunked {
	c := &chunked{nc: nc, wait: readable(nc), pool: pool}
	if len(rest) > 0 {
		c.take()
		c.w = copy(*c.buf, rest)
	}
	return c
}

// Read reads the body's data. It never blocks once it has copied some.
func (c *chunked) Read(p []byte) (n int, err error) {
	defer c.give()
	for {
		switch c.st {
		case chunkEnd:
			return n, io.EOF
		case chunkData:
			if n == len(p) {
				return n, nil
			}
			if c.r < c.w {
				k := copy(p[n:], (*c.buf)[c.r:c.w][:min(int64(c.w-c.r), c.left)])
				c.r += k
				c.left -= int64(k)
				n += k
				if c.left == 0 {
					c.st = chunkCRLF
				}
				continue
			}
		default:
			if line, ok := c.line(); ok {
				if err := c.header(line); err != nil {
					return n, err
				}
				continue
			}
		}
		// More must be read from the connection.
		if n > 0 {
			return n, nil
		}
		if err := c.fill(); err != nil {
			return n, err
		}
	}
}

// Peek returns the current chunk's data that is buffered, without
// copying it: the bytes stay in the read buffer until Discard. With none
// buffered it reads from the connection as Read does (waiting without a
// buffer). It returns bytes or an error, never neither: io.EOF at the
// body's end.
func (c *chunked) Peek() ([]byte, error) {
	for {
		switch c.st {
		case chunkEnd:
			return nil, io.EOF
		case chunkData:
			if c.r < c.w {
				return (*c.buf)[c.r:c.w][:min(int64(c.w-c.r), c.left)], nil
			}
		default:
			if line, ok := c.line(); ok {
				if err := c.header(line); err != nil {
					return nil, err
				}
				continue
			}
		}
		if err := c.fill(); err != nil {
			return nil, err
		}
	}
}

// Discard drops the first n bytes Peek returned. Framing that follows in
// the buffer (the chunk's CRLF, the next size line) is taken too, as Read
// takes it, so that a body whose bytes were all delivered gives its buffer
// back before the next wait; an error in it is Peek's next.
func (c *chunked) Discard(n int) {
	c.r += n
	if c.left -= int64(n); c.left == 0 {
		c.st = chunkCRLF
	}
	for c.st != chunkData && c.st != chunkEnd {
		line, ok := c.line()
		if !ok {
			break
		}
		if err := c.header(line); err != nil {
			// Peek reports it: fill returns c.err before it reads.
			c.r, c.w = 0, 0
			c.err = err
			break
		}
	}
	c.give()
}

// line takes a whole line off the buffer, without its LF and CR.
func (c *chunked) line() ([]byte, bool) {
	if c.r == c.w {
		return nil, false
	}
	b := (*c.buf)[c.r:c.w]
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return nil, false
	}
	c.r += i + 1
	return bytes.TrimSuffix(b[:i], []byte("\r")), true
}

// header takes one line of the framing in state c.st.
func (c *chunked) header(line []byte) error {
	switch c.st {
	case chunkCRLF:
		if len(line) != 0 {
			return errChunkEnd
		}
		c.st = chunkSize
	case chunkSize:
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i] // extensions
		}
		line = bytes.TrimRight(line, " \t")
		if len(line) == 0 || len(line) > 15 {
			return errChunkSize
		}
		size, err := strconv.ParseInt(string(line), 16, 64)
		if err != nil || size < 0 {
			return errChunkSize
		}
		c.left, c.st = size, chunkData
		if size == 0 {
			c.st = chunkTrailer
		}
	case chunkTrailer:
		if len(line) == 0 {
			c.st = chunkEnd
		}
	}
	return nil
}

// fill reads from the connection once: into the buffer's free end, or,
// with nothing buffered, into a buffer taken once the connection can be
// read.
func (c *chunked) fill() error {
	if c.err != nil {
		return c.err
	}
	if c.buf == nil {
		if c.wait != nil {
			c.wait() // its error is the read's too, which reports it
		}
		c.take()
	} else if c.r > 0 {
		c.w = copy(*c.buf, (*c.buf)[c.r:c.w])
		c.r = 0
	}
	if c.w == len(*c.buf) {
		return errLongLine
	}
	k, err := c.nc.Read((*c.buf)[c.w:])
	c.w += k
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if k > 0 {
		c.err = err
		return nil
	}
	if err == nil {
		return nil
	}
	c.err = err
	return err
}

// take borrows a buffer.
func (c *chunked) take() {
	c.buf = c.pool.Get().(*[]byte)
	c.r, c.w = 0, 0
}

// give gives the buffer back once everything in it was read.
func (c *chunked) give() {
	if c.buf != nil && c.r == c.w {
		c.pool.Put(c.buf)
		c.buf = nil
	}
}

// buffered reports whether bytes of the connection were read and not yet
// delivered.
func (c *chunked) buffered() bool { return c.buf != nil && c.r < c.w }
