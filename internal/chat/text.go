package chat

import (
	"strings"
	"unicode/utf8"
)

// ValidText reports whether s is text: valid UTF-8 without NUL (U+0000).
// It is the one rule for every string agentchat accepts and keeps: the
// HTTP edge and the dialects' decoders refuse anything else before it
// reaches a run, and every store backend holds all of it unchanged (see
// package store). It lives here, in the domain every layer shares, so
// that the edge, the wire formats and the store apply one rule without
// importing one another.
func ValidText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}
