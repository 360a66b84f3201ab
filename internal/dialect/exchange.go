package dialect

import "net/http"

// Exchange is one streamed response in a wire format: the encoder of its
// frames and what the format says about the response around them (as
// mercure's encoder owns content type, preamble and heartbeat). The SSE
// writer runs one loop for every format and asks an Exchange; nothing about
// a format lives in that loop.
//
// An Exchange is used by one response, from one goroutine.
type Exchange interface {
	Encoder
	// Header holds the response headers the format adds to the SSE ones
	// (nil for none).
	Header() http.Header
	// Preamble appends what the response starts with, before any event.
	Preamble(dst []byte) []byte
	// Ended reports whether the exchange is over after the events encoded
	// so far (an AG-UI run ended, a chain's final frame): the response ends
	// there though its run or thread may go on.
	Ended() bool
	// Idle is asked whenever the response has caught up with its stream:
	// end reports that the response ends now, after the tail appended (the
	// AI SDK stream once its run has paused for a person).
	Idle(dst []byte) (out []byte, end bool)
}

// Follow is the Exchange part of a format whose response follows its stream
// until the stream ends: no headers of its own, no preamble, no end of its
// own. Encoders of such formats embed it.
type Follow struct{}

// Header returns nil: the SSE headers are all.
func (Follow) Header() http.Header { return nil }

// Preamble appends nothing.
func (Follow) Preamble(dst []byte) []byte { return dst }

// Ended is false: the stream's end ends the response.
func (Follow) Ended() bool { return false }

// Idle never ends the response.
func (Follow) Idle(dst []byte) ([]byte, bool) { return dst, false }
