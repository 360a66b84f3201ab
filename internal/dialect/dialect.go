package dialect

import (
	"cmp"
	"strconv"
	"strings"
	"time"

	"github.com/agentchat/agentchat/internal/event"
)

// Encoder translates one stream's events into frames.
type Encoder interface {
	// Encode appends the frames for ev (possibly none) to dst.
	Encode(dst []byte, ev event.Event) []byte
	// KeepAlive appends the dialect's keep-alive: an event or a comment.
	KeepAlive(dst []byte, now time.Time) []byte
	// Abort appends what tells a client the stream ends early though the run
	// goes on (server shutdown, a client too slow): it should reconnect.
	// It carries no id: it is no position in the stream.
	Abort(dst []byte, info event.ErrorInfo) []byte
	// Resume makes the encoder leave out the frames at or before after, the
	// Last-Event-ID of a client that reconnects: it has them. The encoder
	// still reads the events behind them, so its state, and the ids of the
	// frames it writes, are those of a stream that never dropped.
	Resume(after ID)
}

// Frame is one SSE frame. ID and Event must not contain CR, LF or NUL;
// AppendFrame drops such a field rather than let it split the stream.
type Frame struct {
	ID    string
	Event string
	Data  []byte // may contain newlines: each line becomes a data: line
}

// AppendFrame appends f in SSE syntax.
func AppendFrame(dst []byte, f Frame) []byte {
	if f.Event != "" && safeField(f.Event) {
		dst = append(dst, "event: "...)
		dst = append(dst, f.Event...)
		dst = append(dst, '\n')
	}
	if f.ID != "" && safeField(f.ID) {
		dst = append(dst, "id: "...)
		dst = append(dst, f.ID...)
		dst = append(dst, '\n')
	}
	return appendData(dst, f.Data)
}

// appendData appends data as data: lines and the blank line that ends a frame.
func appendData(dst, data []byte) []byte {
	for {
		i := indexNewline(data)
		dst = append(dst, "data: "...)
		if i < 0 {
			dst = append(dst, data...)
			dst = append(dst, '\n')
			break
		}
		dst = append(dst, data[:i]...)
		dst = append(dst, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return append(dst, '\n')
}

func indexNewline(b []byte) int {
	for i, c := range b {
		if c == '\n' || c == '\r' {
			return i
		}
	}
	return -1
}

func safeField(s string) bool { return !strings.ContainsAny(s, "\r\n\x00") }

// AppendComment appends an SSE comment line (ignored by clients; keeps proxies awake).
func AppendComment(dst []byte, text string) []byte {
	dst = append(dst, ": "...)
	dst = append(dst, strings.NewReplacer("\r", " ", "\n", " ").Replace(text)...)
	return append(dst, '\n', '\n')
}

// AppendRetry appends a reconnection-delay hint.
func AppendRetry(dst []byte, d time.Duration) []byte {
	dst = append(dst, "retry: "...)
	dst = strconv.AppendInt(dst, d.Milliseconds(), 10)
	return append(dst, '\n', '\n')
}

// MessageID is the id a dialect gives the message a text or reasoning event
// belongs to: id when the engine named it, else one per run ("<run>-message").
// Wire formats need a non-empty id, and an encoder's state keeps "" for "no
// message open", so every encoder names an unnamed message the same way.
func MessageID(id string, ev event.Event) string { return cmp.Or(id, ev.Run+"-message") }

// Millis formats t as RFC 3339 UTC with milliseconds, the API's time format.
func Millis(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }
