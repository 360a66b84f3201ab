package jsonstr_test

import (
	"encoding/json"
	"testing"

	"github.com/agentchat/agentchat/internal/jsonstr"
)

// FuzzAppend: Append writes exactly what json.Marshal writes for the same
// string, so JSON written by hand matches JSON written by reflection.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "token ", "a\"b\\c", "<p>&amp;</p>", "\x00\x01\x08\x0c\n\r\t\x1f\x7f",
		"\u2028\u2029", "héllo 世界 🙂", "\xff\xfe bad \xe2\x82", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonstr.Append([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("Append(%q) = %s, json.Marshal: %s", s, got[1:], want)
		}
	})
}
