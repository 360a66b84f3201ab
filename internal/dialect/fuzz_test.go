package dialect_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/ssetest"
)

// FuzzAppendFrame: whatever the fields hold, a frame is one SSE event that
// a browser's EventSource reads back exactly: no CR anywhere, no line break
// or NUL in id or event (such a field is dropped, never split), every line
// a known field, the data reassembled equal to what was sent (line breaks
// normalised to LF). A comment is one line whatever its text.
func FuzzAppendFrame(f *testing.F) {
	f.Add("7", "agent.delta", []byte(`{"a":1}`))
	f.Add("", "", []byte("[DONE]"))
	f.Add("1\ndata: x", "e\rx", []byte("a\r\nb\rc\nd"))
	f.Add("3\x00", " spaced", []byte("\n\n\x00"))
	f.Fuzz(func(t *testing.T, id, name string, data []byte) {
		out := dialect.AppendFrame(nil, dialect.Frame{ID: id, Event: name, Data: data})
		if bytes.IndexByte(out, '\r') >= 0 {
			t.Fatalf("frame holds a CR: %q", out)
		}
		body, ok := bytes.CutSuffix(out, []byte("\n\n"))
		if !ok {
			t.Fatalf("frame does not end with a blank line: %q", out)
		}
		safe := func(s string) bool { return s != "" && !strings.ContainsAny(s, "\r\n\x00") }
		var gotID, gotEvent string
		var lines []string
		for _, line := range strings.Split(string(body), "\n") {
			switch {
			case strings.HasPrefix(line, "data: "):
				lines = append(lines, strings.TrimPrefix(line, "data: "))
			case strings.HasPrefix(line, "id: ") && gotID == "" && len(lines) == 0:
				gotID = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: ") && gotEvent == "" && gotID == "" && len(lines) == 0:
				gotEvent = strings.TrimPrefix(line, "event: ")
			default:
				t.Fatalf("unexpected line %q in %q", line, out)
			}
		}
		if want := map[bool]string{true: id}[safe(id)]; gotID != want {
			t.Fatalf("id line %q, want %q", gotID, want)
		}
		if want := map[bool]string{true: name}[safe(name)]; gotEvent != want {
			t.Fatalf("event line %q, want %q", gotEvent, want)
		}
		norm := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(string(data))
		if joined := strings.Join(lines, "\n"); joined != norm {
			t.Fatalf("data lines rejoin to %q, want %q", joined, norm)
		}
		// A real EventSource parser sees the same one event.
		rd := ssetest.NewReader(bytes.NewReader(out))
		fr, err := rd.Next()
		if err != nil {
			t.Fatalf("parse %q: %v", out, err)
		}
		if fr.Data != norm || fr.ID != gotID || (gotEvent != "" && fr.Event != gotEvent) {
			t.Fatalf("parsed %+v from %q", fr, out)
		}
		if _, err := rd.Next(); err != io.EOF {
			t.Fatalf("more than one event in %q", out)
		}

		comment := dialect.AppendComment(nil, id)
		if bytes.Count(comment, []byte("\n")) != 2 || !bytes.HasSuffix(comment, []byte("\n\n")) || bytes.IndexByte(comment, '\r') >= 0 {
			t.Fatalf("comment %q is not one line", comment)
		}
	})
}
