package httpapi

// What text agentchat accepts is decided here, once, where requests enter:
// store.ValidText (UTF-8 without NUL) for every string of a JSON body (keys
// included, escapes decoded: \u0000 and unpaired surrogates are refused, not
// mended into U+FFFD), every query parameter and the principal of a token;
// anything else is a 400 naming the field (401 for a token). Ids in paths
// are checked against the shape every stored id has (possibleID): one that
// cannot exist is an unknown id, 404, and never reaches a store.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentchat/agentchat/internal/store"
)

// idPattern is the shape of every id a client can name an object by: the
// server's UUIDs, and the chat and thread ids clients choose (which are
// checked against it, or a subset of it, before they name anything).
var idPattern = regexp.MustCompile(`^[A-Za-z0-9._:~-]{1,128}$`)

// possibleID reports whether id could name a stored object.
func possibleID(id string) bool { return idPattern.MatchString(id) }

// textError is the answer for a string outside store.ValidText.
func textError(where string) *Error {
	return apiErr(http.StatusBadRequest, "invalid_text", "%s must be UTF-8 text without NUL characters or unpaired surrogates", where)
}

// checkQueryText refuses a request whose query holds a name or value that
// is not text.
func checkQueryText(r *http.Request) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	for k, vs := range r.URL.Query() {
		if !store.ValidText(k) {
			return textError("a query parameter name")
		}
		for _, v := range vs {
			if !store.ValidText(v) {
				return textError("query parameter " + strconv.Quote(k))
			}
		}
	}
	return nil
}

// checkJSONText walks a JSON document and refuses the first string (key or
// value) that is not text, naming where it is ("messages[0].content").
// Well-formedness is the decoder's to judge: it returns nil for a document
// it cannot walk. It reads the raw literals, because decoding has already
// replaced invalid UTF-8 and lone surrogates with U+FFFD.
func checkJSONText(body []byte) error {
	type frame struct {
		array   bool
		index   int
		key     string
		wantKey bool
	}
	var stack []frame
	advance := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].array {
				stack[n-1].index++
			} else {
				stack[n-1].wantKey = true
			}
		}
	}
	path := func(withKey bool) string {
		var b strings.Builder
		for i, f := range stack {
			switch {
			case f.array:
				b.WriteString("[" + strconv.Itoa(f.index) + "]")
			case i == len(stack)-1 && !withKey:
			default:
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			}
		}
		return b.String()
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	prev := int64(0)
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or not JSON: decoding says so
		}
		end := dec.InputOffset()
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, frame{wantKey: true})
			case '[':
				stack = append(stack, frame{array: true})
			default:
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
				advance()
			}
		case string:
			n := len(stack)
			isKey := n > 0 && !stack[n-1].array && stack[n-1].wantKey
			if !textLiteral(rawString(body, prev, end)) {
				where := path(!isKey)
				switch {
				case isKey && where == "":
					return textError("a field name of the request body")
				case isKey:
					return textError("a field name in " + strconv.Quote(where))
				case where == "":
					return textError("the request body")
				}
				return textError("field " + strconv.Quote(where))
			}
			if isKey {
				stack[n-1].key, stack[n-1].wantKey = v, false
			} else {
				advance()
			}
		default:
			advance()
		}
		prev = end
	}
}

// rawString is the string literal, quotes included, of the token that ends
// at end; the token starts after separators following prev.
func rawString(body []byte, prev, end int64) []byte {
	if prev < 0 || end > int64(len(body)) || prev > end {
		return nil
	}
	b := body[prev:end]
	if i := bytes.IndexByte(b, '"'); i >= 0 {
		return b[i:]
	}
	return nil
}

// textLiteral reports whether a JSON string literal (quotes included)
// decodes to text: valid UTF-8, no \u0000, surrogate escapes in pairs.
func textLiteral(lit []byte) bool {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return false
	}
	s := lit[1 : len(lit)-1]
	for i := 0; i < len(s); {
		c := s[i]
		if c == 0 {
			return false
		}
		if c < utf8.RuneSelf && c != '\\' {
			i++
			continue
		}
		if c != '\\' {
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size <= 1 {
				return false
			}
			i += size
			continue
		}
		if i+1 >= len(s) {
			return false
		}
		if s[i+1] != 'u' {
			i += 2
			continue
		}
		r, ok := hex4(s, i+2)
		if !ok || r == 0 {
			return false
		}
		i += 6
		switch {
		case utf16.IsSurrogate(r) && r < 0xDC00: // high: a low one must follow
			lo, ok := rune(0), false
			if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
				lo, ok = hex4(s, i+2)
			}
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return false
			}
			i += 6
		case utf16.IsSurrogate(r): // a low one alone
			return false
		}
	}
	return true
}

// hex4 reads the four hex digits at s[i:].
func hex4(s []byte, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(s[i:i+4]), 16, 16)
	return rune(n), err == nil
}
