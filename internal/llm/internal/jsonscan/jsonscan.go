// Package jsonscan is a small JSON scanner for the provider adapters'
// stream decoders: no reflection, no allocation but the strings a caller
// keeps. A decoder walks the members it wants with Object and Array and
// skips the rest with Skip, which validates what it skips.
//
// It accepts exactly the JSON encoding/json accepts (nesting bounded at
// the same 10000 levels) and unquotes strings as encoding/json does:
// escapes, surrogate pairs, and invalid UTF-8 and lone surrogates as
// U+FFFD.
package jsonscan

import (
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds nesting, as encoding/json does, so hostile input cannot
// grow the stack without limit.
const maxDepth = 10000

// Scanner scans one JSON text at a time. The zero value is ready for Reset.
type Scanner struct {
	data    []byte
	pos     int
	depth   int    // of the object or array being parsed
	scratch []byte // unquoting buffer for strings with escapes
}

// Reset starts scanning data.
func (d *Scanner) Reset(data []byte) {
	d.data, d.pos, d.depth = data, 0, 0
}

// Finish checks that nothing but whitespace follows the value scanned,
// and lets go of the data.
func (d *Scanner) Finish() error {
	d.ws()
	var err error
	if d.pos < len(d.data) {
		err = d.fail("data after the top-level value")
	}
	d.data = nil
	return err
}

// Error is input that is not valid JSON.
type Error struct {
	msg string
	off int
}

func (e *Error) Error() string {
	return "invalid JSON at offset " + strconv.Itoa(e.off) + ": " + e.msg
}

// Fail returns an *Error at the current position: for input that is JSON
// but not what the caller's format allows.
func (d *Scanner) Fail(msg string) error { return d.fail(msg) }

func (d *Scanner) fail(msg string) error {
	return &Error{msg: msg, off: d.pos}
}

func (d *Scanner) failEOF() error {
	if d.pos >= len(d.data) {
		return d.fail("unexpected end of JSON input")
	}
	return d.fail("invalid character " + strconv.QuoteRune(rune(d.data[d.pos])))
}

// ws skips whitespace.
func (d *Scanner) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// Peek returns the next non-space byte, 0 at the end: the caller looks
// at what comes to choose how to read it.
func (d *Scanner) Peek() byte {
	d.ws()
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

// Null consumes a null literal if one is next.
func (d *Scanner) Null() (bool, error) {
	if d.Peek() != 'n' {
		return false, nil
	}
	return true, d.literal("null")
}

func (d *Scanner) literal(lit string) error {
	if len(d.data)-d.pos < len(lit) || string(d.data[d.pos:d.pos+len(lit)]) != lit {
		// Report the first wrong byte, or the end.
		for i := 0; i < len(lit); i++ {
			if d.pos >= len(d.data) || d.data[d.pos] != lit[i] {
				return d.failEOF()
			}
			d.pos++
		}
	}
	d.pos += len(lit)
	return nil
}

// Object parses an object, calling member for each key with the scanner
// at its value; member must consume the value (Skip it, at least). Keys
// come unquoted, in a buffer valid only until member reads a string.
func (d *Scanner) Object(member func(key []byte) error) error {
	if d.Peek() != '{' {
		return d.failEOF()
	}
	if d.depth++; d.depth > maxDepth {
		return d.fail("exceeded max depth")
	}
	defer func() { d.depth-- }()
	d.pos++
	if d.Peek() == '}' {
		d.pos++
		return nil
	}
	for {
		if d.Peek() != '"' {
			return d.failEOF()
		}
		key, err := d.key()
		if err != nil {
			return err
		}
		if d.Peek() != ':' {
			return d.failEOF()
		}
		d.pos++
		if err := member(key); err != nil {
			return err
		}
		switch d.Peek() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return nil
		default:
			return d.failEOF()
		}
	}
}

// Array parses an array, calling elem with the scanner at each element;
// elem must consume it.
func (d *Scanner) Array(elem func() error) error {
	if d.Peek() != '[' {
		return d.failEOF()
	}
	if d.depth++; d.depth > maxDepth {
		return d.fail("exceeded max depth")
	}
	defer func() { d.depth-- }()
	d.pos++
	if d.Peek() == ']' {
		d.pos++
		return nil
	}
	for {
		d.ws()
		if err := elem(); err != nil {
			return err
		}
		switch d.Peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return nil
		default:
			return d.failEOF()
		}
	}
}

// String reads a string value into dst; null or another type sets it to
// "" (and is skipped).
func (d *Scanner) String(dst *string) error {
	if d.Peek() != '"' {
		*dst = ""
		return d.Skip()
	}
	raw, plain, err := d.scanString()
	if err != nil {
		return err
	}
	if plain {
		*dst = string(raw)
		return nil
	}
	d.scratch = unquote(d.scratch[:0], raw)
	*dst = string(d.scratch)
	return nil
}

// Enum reads a string value into dst like String, but takes it from known
// when it is one of them, so the common values of an enumeration cost no
// allocation.
func (d *Scanner) Enum(dst *string, known []string) error {
	if d.Peek() != '"' {
		*dst = ""
		return d.Skip()
	}
	raw, plain, err := d.scanString()
	if err != nil {
		return err
	}
	if !plain {
		d.scratch = unquote(d.scratch[:0], raw)
		*dst = string(d.scratch)
		return nil
	}
	for _, k := range known {
		if string(raw) == k {
			*dst = k
			return nil
		}
	}
	*dst = string(raw)
	return nil
}

// key reads an object key. The result aliases the input or the scratch
// buffer: valid until the next string is read.
func (d *Scanner) key() ([]byte, error) {
	raw, plain, err := d.scanString()
	if err != nil || plain {
		return raw, err
	}
	d.scratch = unquote(d.scratch[:0], raw)
	return d.scratch, nil
}

// plainByte marks the bytes a string may hold as they are: printable
// ASCII other than the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for b := 0x20; b < 0x80; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// scanString consumes a string whose opening quote is next and returns its
// contents between the quotes, and whether they are plain: free of escapes
// and valid UTF-8, so the bytes are the value.
func (d *Scanner) scanString() (raw []byte, plain bool, err error) {
	d.pos++ // the opening quote
	start := d.pos
	data := d.data
	i := start
	for i < len(data) && plainByte[data[i]] {
		i++
	}
	if i < len(data) && data[i] == '"' {
		d.pos = i + 1
		return data[start:i], true, nil
	}
	ascii, escaped := true, false
	for i < len(data) {
		switch b := data[i]; {
		case b == '"':
			d.pos = i + 1
			raw = data[start:i]
			if escaped {
				return raw, false, nil
			}
			return raw, ascii || utf8.Valid(raw), nil
		case b == '\\':
			escaped = true
			if i+1 >= len(data) {
				d.pos = len(data)
				return nil, false, d.fail("unexpected end of JSON input")
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for j := i + 2; j < i+6; j++ {
					if j >= len(data) {
						d.pos = len(data)
						return nil, false, d.fail("unexpected end of JSON input")
					}
					if hexVal(data[j]) < 0 {
						d.pos = j
						return nil, false, d.fail("invalid character in \\u escape")
					}
				}
				i += 6
			default:
				d.pos = i + 1
				return nil, false, d.fail("invalid escape in string")
			}
		case b < 0x20:
			d.pos = i
			return nil, false, d.fail("control character in string")
		default:
			if b >= 0x80 {
				ascii = false
			}
			i++
		}
	}
	d.pos = len(data)
	return nil, false, d.fail("unexpected end of JSON input")
}

func hexVal(b byte) rune {
	switch {
	case '0' <= b && b <= '9':
		return rune(b - '0')
	case 'a' <= b && b <= 'f':
		return rune(b - 'a' + 10)
	case 'A' <= b && b <= 'F':
		return rune(b - 'A' + 10)
	}
	return -1
}

// getu4 decodes \uXXXX at the start of s, -1 if s does not start so.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, b := range s[2:6] {
		v := hexVal(b)
		if v < 0 {
			return -1
		}
		r = r*16 + v
	}
	return r
}

// unquote appends the value of raw, string contents that scanString
// validated, to dst, as encoding/json unquotes them.
func unquote(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		switch b := raw[i]; {
		case b == '\\':
			switch raw[i+1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := getu4(raw[i:])
				i += 6
				if utf16.IsSurrogate(r) {
					if dec := utf16.DecodeRune(r, getu4(raw[i:])); dec != unicode.ReplacementChar {
						dst = utf8.AppendRune(dst, dec)
						i += 6
						continue
					}
					r = unicode.ReplacementChar
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, raw[i+1])
			}
			i += 2
		case b < utf8.RuneSelf:
			dst = append(dst, b)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, unicode.ReplacementChar)
			} else {
				dst = append(dst, raw[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}

// Int reads an integer value into dst. A number with a fraction or an
// exponent is truncated towards zero, as the SDKs do; one out of range,
// null and any other type set dst to 0.
func (d *Scanner) Int(dst *int64) error {
	*dst = 0
	switch c := d.Peek(); {
	case c == '-' || ('0' <= c && c <= '9'):
	default:
		return d.Skip()
	}
	start := d.pos
	integer, err := d.number()
	if err != nil {
		return err
	}
	num := d.data[start:d.pos]
	if integer {
		if v, err := strconv.ParseInt(string(num), 10, 64); err == nil {
			*dst = v
		}
		return nil
	}
	if f, err := strconv.ParseFloat(string(num), 64); err == nil && f > -1<<63 && f < 1<<63 {
		*dst = int64(f)
	}
	return nil
}

// number consumes a JSON number and reports whether it is an integer.
func (d *Scanner) number() (integer bool, err error) {
	data := d.data
	i := d.pos
	if i < len(data) && data[i] == '-' {
		i++
	}
	digits := func() bool {
		s := i
		for i < len(data) && '0' <= data[i] && data[i] <= '9' {
			i++
		}
		return i > s
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		digits()
	default:
		d.pos = i
		return false, d.failEOF()
	}
	integer = true
	if i < len(data) && data[i] == '.' {
		integer = false
		i++
		if !digits() {
			d.pos = i
			return false, d.failEOF()
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		integer = false
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if !digits() {
			d.pos = i
			return false, d.failEOF()
		}
	}
	d.pos = i
	return integer, nil
}

// Skip consumes one value of any type, validating it.
func (d *Scanner) Skip() error {
	switch c := d.Peek(); {
	case c == '"':
		_, _, err := d.scanString()
		return err
	case c == '{':
		return d.Object(func([]byte) error { return d.Skip() })
	case c == '[':
		return d.Array(d.Skip)
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		_, err := d.number()
		return err
	}
	return d.failEOF()
}
