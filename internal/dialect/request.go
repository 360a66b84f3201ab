package dialect

// Requests: each wire format decodes its own request body (native.ChatRequest,
// agui.RunAgentInput, vercel.Request) with DecodeJSON, so one rule decides
// what a request may hold. Text is UTF-8 without NUL: every string of a body
// (keys too, escapes decoded) holding NUL, invalid UTF-8 or an unpaired
// surrogate is refused, naming where it is, rather than mended into U+FFFD
// on the way in (and refused by PostgreSQL later).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/errcode"
)

// RequestError is a request body a dialect refuses: the client's mistake,
// with the status, the stable code and the message to answer with.
type RequestError struct {
	Status  int
	Code    string
	Message string
}

func (e *RequestError) Error() string { return e.Code + ": " + e.Message }

// BadRequest is a RequestError with status 400.
func BadRequest(code, format string, a ...any) *RequestError {
	return &RequestError{Status: http.StatusBadRequest, Code: code, Message: fmt.Sprintf(format, a...)}
}

// Unusable is a RequestError with status 422: valid JSON the server cannot use.
func Unusable(code, format string, a ...any) *RequestError {
	return &RequestError{Status: http.StatusUnprocessableEntity, Code: code, Message: fmt.Sprintf(format, a...)}
}

// Decoding modes of DecodeJSON.
const (
	// Strict refuses fields the value does not declare.
	Strict = iota
	// Lenient ignores them (peers of a standard send newer fields).
	Lenient
)

// DecodeJSON decodes body, one JSON object, into v, and refuses any string
// in it that is not text (CheckJSONText). An empty body is an error unless
// allowEmpty is set, when it leaves v as it is.
func DecodeJSON(body []byte, v any, mode int, allowEmpty bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		if allowEmpty {
			return nil
		}
		return BadRequest(errcode.InvalidJSON, "the request body is empty; a JSON object is expected")
	}
	if bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
		// json.Decode takes null into a struct as "nothing", but null is
		// not the object the API documents.
		return BadRequest(errcode.InvalidJSON, "the request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if mode == Strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	// More reports only another element of an enclosing array or object:
	// after the top-level value, anything but the end (a stray "]", say)
	// is data the object does not account for.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return BadRequest(errcode.InvalidJSON, "the request body has data after the JSON object")
	}
	return CheckJSONText(body)
}

func jsonError(err error) *RequestError {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
		return BadRequest(errcode.InvalidJSON, "the request body is not valid JSON")
	case errors.As(err, &te):
		if te.Field == "" {
			return BadRequest(errcode.InvalidJSON, "the request body must be a JSON object")
		}
		return BadRequest(errcode.InvalidField, "field %q must be %s, not %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json reports an unknown field only in its text (it has
		// no error type for it); the unknown_field tests in httpapi pin it.
		return BadRequest(errcode.UnknownField, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return BadRequest(errcode.InvalidJSON, "the request body is not valid JSON")
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "struct", "map":
		return "an object"
	case "slice", "array":
		return "an array"
	case "bool":
		return "a boolean"
	}
	return "a number"
}

// TextError is the answer for a string that is not text; where names it
// (`field "title"`, `query parameter "cursor"`).
func TextError(where string) *RequestError {
	return BadRequest(errcode.InvalidText, "%s must be UTF-8 text without NUL characters or unpaired surrogates", where)
}

// CheckJSONText walks a JSON document and refuses the first string (key or
// value) that is not text, naming where it is ("messages[0].content").
// Well-formedness is the decoder's to judge: it returns nil for a document
// it cannot walk. It reads the raw literals, because decoding has already
// replaced invalid UTF-8 and lone surrogates with U+FFFD.
func CheckJSONText(body []byte) error {
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
					return TextError("a field name of the request body")
				case isKey:
					return TextError("a field name in " + strconv.Quote(where))
				case where == "":
					return TextError("the request body")
				}
				return TextError("field " + strconv.Quote(where))
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
// at end; the token starts after the separators following prev.
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

// MaxAgentIDBytes bounds an agent id a request names (the store's key limit).
const MaxAgentIDBytes = 255

// AgentRef is the agent a run-starting request names, in any format: an
// agent id ("" for the conversation's or the tenant's default) and a
// version to pin (0 for the published one).
type AgentRef struct {
	ID      string
	Version int
}

// CheckAgentRef refuses an agent reference no agent can have: an id over
// MaxAgentIDBytes or with spaces, a negative version, a version without an
// id. idField and versionField name the request's fields in its own words.
func CheckAgentRef(r AgentRef, idField, versionField string) error {
	if len(r.ID) > MaxAgentIDBytes || strings.ContainsAny(r.ID, " \t\r\n") {
		return Unusable(errcode.InvalidField, "field %q is not an agent id", idField)
	}
	if r.Version < 0 {
		return Unusable(errcode.InvalidField, "field %q must be a version number (1 or more)", versionField)
	}
	if r.Version > 0 && r.ID == "" {
		return Unusable(errcode.InvalidField, "field %q needs %q: a version belongs to one agent", versionField, idField)
	}
	return nil
}

// CheckMultitask refuses a multitask strategy that is not one
// (chat.ParseMultitaskStrategy); field names it in the request's words.
func CheckMultitask(strategy, field string) error {
	if _, ok := chat.ParseMultitaskStrategy(strategy); !ok {
		return Unusable(errcode.InvalidField, "field %q must be reject, enqueue, interrupt or rollback", field)
	}
	return nil
}
