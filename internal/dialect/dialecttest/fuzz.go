package dialecttest

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect"
)

// FuzzDecoder fuzzes a request decoder for what dialect.DecodeJSON
// promises: a body is refused with a client error (a *dialect.RequestError,
// status 4xx), never a panic or anything else, or it decodes to a value
// whose every string is text that was in the body (valid UTF-8, no NUL,
// nothing mended into U+FFFD), and decoding is stable: the value re-encoded
// decodes to a value that encodes the same.
func FuzzDecoder(f *testing.F, seeds []string, decode func(body []byte) (any, error)) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		v, err := decode(body)
		if err != nil {
			var re *dialect.RequestError
			if !errors.As(err, &re) || re.Status < 400 || re.Status >= 500 || re.Code == "" || re.Message == "" {
				t.Fatalf("body %q: error %#v is not a client error", body, err)
			}
			return
		}
		if !utf8.Valid(body) {
			t.Fatalf("accepted a body that is not UTF-8: %q", body)
		}
		lower := bytes.ToLower(body)
		mended := bytes.Contains(body, []byte("\uFFFD")) || bytes.Contains(lower, []byte(`\ufffd`))
		walkStrings(t, reflect.ValueOf(v), "", func(path, s string) {
			if !chat.ValidText(s) {
				t.Fatalf("%s decoded to %q, not text", path, s)
			}
			if strings.ContainsRune(s, utf8.RuneError) && !mended {
				t.Fatalf("%s decoded to %q: mended, not refused", path, s)
			}
		})
		once, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		v2, err := decode(once)
		if err != nil {
			t.Fatalf("the re-encoded %s is refused: %v", once, err)
		}
		if twice, _ := json.Marshal(v2); !bytes.Equal(once, twice) {
			t.Fatalf("unstable: %s then %s", once, twice)
		}
	})
}

// walkStrings calls fn for every string reachable in v; a json.RawMessage
// must hold JSON whose strings are text.
func walkStrings(t *testing.T, v reflect.Value, path string, fn func(path, s string)) {
	t.Helper()
	if v.Type() == reflect.TypeFor[json.RawMessage]() {
		if raw := v.Bytes(); len(raw) > 0 && (!json.Valid(raw) || dialect.CheckJSONText(raw) != nil) {
			t.Fatalf("%s holds %q: not JSON of text", path, raw)
		}
		return
	}
	switch v.Kind() {
	case reflect.String:
		fn(path, v.String())
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkStrings(t, v.Elem(), path, fn)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				walkStrings(t, v.Field(i), path+"."+f.Name, fn)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkStrings(t, v.Index(i), path+"["+strconv.Itoa(i)+"]", fn)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			walkStrings(t, k, path+"{key}", fn)
			walkStrings(t, v.MapIndex(k), path+"{}", fn)
		}
	}
}
