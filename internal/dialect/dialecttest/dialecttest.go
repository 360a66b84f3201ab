// Package dialecttest holds what the wire-format tests share: the canonical
// event scripts, golden-file comparison and JSON checks (frames are parsed
// with ssetest.Parse). Only tests import it.
//
// The golden files of every dialect live together in internal/dialect/testdata,
// named <script>.<dialect>.golden, so one script's encodings sit side by side.
package dialecttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/ssetest"
)

// Dir is the absolute path of internal/dialect/testdata.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata")
}

// Encode runs a fresh stream of events through enc and returns every frame.
func Encode(enc dialect.Encoder, evs []event.Event) []byte {
	var out []byte
	for _, ev := range evs {
		out = enc.Encode(out, ev)
	}
	return out
}

// Golden compares got with testdata/name, or rewrites the file when update is set.
func Golden(t testing.TB, name string, got []byte, update bool) {
	t.Helper()
	path := filepath.Join(Dir(), name)
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update to accept):\n%s", name, firstDiff(string(want), string(got)))
	}
}

func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n want %q\n  got %q", i+1, w, g)
		}
	}
	return "(no line differs)"
}

// Object decodes a frame's data as a JSON object, failing the test otherwise.
func Object(t testing.TB, data string) map[string]any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("frame data is not a JSON object: %v\n%s", err, data)
	}
	return m
}

// NoNull fails the test if a JSON document holds a null anywhere: several
// clients treat a null optional field as fatal.
func NoNull(t testing.TB, data string) {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, data)
	}
	if path, ok := findNull(v, "$"); ok {
		t.Errorf("null at %s in %s", path, data)
	}
}

func findNull(v any, path string) (string, bool) {
	switch x := v.(type) {
	case nil:
		return path, true
	case map[string]any:
		for k, e := range x {
			if p, ok := findNull(e, path+"."+k); ok {
				return p, true
			}
		}
	case []any:
		for i, e := range x {
			if p, ok := findNull(e, fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, true
			}
		}
	}
	return "", false
}

// CheckZeroPayloads encodes every event type with a zero payload and checks
// that each frame is still a JSON object: an encoder must not choke on an
// event some engine filled in sparsely.
func CheckZeroPayloads(t *testing.T, encs ...dialect.Encoder) {
	t.Helper()
	for _, enc := range encs {
		for _, f := range ssetest.Parse(t, Encode(enc, ZeroEvents())) {
			if f.Data != "[DONE]" {
				Object(t, f.Data)
			}
		}
	}
}
