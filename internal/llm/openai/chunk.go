package openai

import (
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// chunk is one chat.completion.chunk, narrowed to the fields the adapter
// uses. A chunkDecoder fills it in place, reusing its slices, so decoding a
// chunk allocates only the strings it keeps.
type chunk struct {
	// isError: the event has a top-level "error" member (even null), which
	// makes it an in-stream error event, as the SDK has it.
	isError  bool
	hasUsage bool // "usage" is an object (absent and null are not usage)
	usage    usage
	choices  []choice
}

type usage struct {
	promptTokens, completionTokens, reasoningTokens int64
}

type choice struct {
	index        int64
	finishReason string
	delta        delta
}

type delta struct {
	content, refusal string
	// reasoningContent and reasoning are the fields thinking models add
	// (DeepSeek, Qwen, vLLM: reasoning_content; some newer servers:
	// reasoning), when they are strings.
	reasoningContent, reasoning string
	toolCalls                   []toolCall
}

type toolCall struct {
	index          int64
	id, name, args string
}

// maxDepth bounds the nesting of skipped values, as encoding/json does, so
// hostile input cannot grow the stack without limit.
const maxDepth = 10000

// chunkDecoder decodes chunk JSON without reflection: one pass over the
// bytes, unknown members skipped (validated, never decoded), members in any
// order, whitespace anywhere. It accepts exactly the JSON encoding/json
// accepts and unquotes strings as it does (escapes, surrogate pairs, invalid
// UTF-8 and lone surrogates as U+FFFD).
//
// A member sets its field afresh: where the same key comes twice in an
// object, the last one decides, as for a map. A value of another type than
// the API's (a number for content, a string for an index) is taken as
// absent, and so is null; array elements that are not objects are skipped.
// The top level may be null (an empty chunk); any other non-object is an
// error.
type chunkDecoder struct {
	data    []byte
	pos     int
	depth   int    // of the object or array being parsed
	scratch []byte // unquoting buffer for strings with escapes
}

// decodeError is a chunk that is not valid JSON.
type decodeError struct {
	msg string
	off int
}

func (e *decodeError) Error() string {
	return "invalid JSON in a chunk at offset " + strconv.Itoa(e.off) + ": " + e.msg
}

// decode parses data into c, which it resets first.
func (d *chunkDecoder) decode(data []byte, c *chunk) error {
	d.data, d.pos, d.depth = data, 0, 0
	c.isError, c.hasUsage, c.usage = false, false, usage{}
	c.choices = c.choices[:0]
	err := d.top(c)
	if err == nil {
		d.ws()
		if d.pos < len(d.data) {
			err = d.fail("data after the top-level value")
		}
	}
	d.data = nil
	return err
}

func (d *chunkDecoder) fail(msg string) error {
	return &decodeError{msg: msg, off: d.pos}
}

func (d *chunkDecoder) failEOF() error {
	if d.pos >= len(d.data) {
		return d.fail("unexpected end of JSON input")
	}
	return d.fail("invalid character " + strconv.QuoteRune(rune(d.data[d.pos])))
}

// ws skips whitespace.
func (d *chunkDecoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, 0 at the end.
func (d *chunkDecoder) peek() byte {
	d.ws()
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

// null consumes a null literal if one is next.
func (d *chunkDecoder) null() (bool, error) {
	if d.peek() != 'n' {
		return false, nil
	}
	return true, d.literal("null")
}

func (d *chunkDecoder) literal(lit string) error {
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

// object parses an object whose opening brace is next, calling member for
// each key with the position at its value; member must consume the value.
// Keys come unquoted in a buffer valid only during the call.
func (d *chunkDecoder) object(member func(key []byte) error) error {
	if d.peek() != '{' {
		return d.failEOF()
	}
	if d.depth++; d.depth > maxDepth {
		return d.fail("exceeded max depth")
	}
	defer func() { d.depth-- }()
	d.pos++
	if d.peek() == '}' {
		d.pos++
		return nil
	}
	for {
		if d.peek() != '"' {
			return d.failEOF()
		}
		key, err := d.key()
		if err != nil {
			return err
		}
		if d.peek() != ':' {
			return d.failEOF()
		}
		d.pos++
		if err := member(key); err != nil {
			return err
		}
		switch d.peek() {
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

// array parses an array whose opening bracket is next, calling elem with
// the position at each element; elem must consume it.
func (d *chunkDecoder) array(elem func() error) error {
	if d.peek() != '[' {
		return d.failEOF()
	}
	if d.depth++; d.depth > maxDepth {
		return d.fail("exceeded max depth")
	}
	defer func() { d.depth-- }()
	d.pos++
	if d.peek() == ']' {
		d.pos++
		return nil
	}
	for {
		d.ws()
		if err := elem(); err != nil {
			return err
		}
		switch d.peek() {
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

func (d *chunkDecoder) top(c *chunk) error {
	if isNull, err := d.null(); isNull || err != nil {
		return err
	}
	if d.peek() != '{' {
		return d.fail("a chunk must be a JSON object")
	}
	return d.object(func(key []byte) error {
		switch string(key) {
		case "choices":
			c.choices = c.choices[:0]
			if d.peek() != '[' {
				return d.skip()
			}
			return d.array(func() error {
				if d.peek() != '{' {
					return d.skip()
				}
				return d.choice(c.nextChoice())
			})
		case "usage":
			c.usage = usage{}
			c.hasUsage = d.peek() == '{'
			if c.hasUsage {
				return d.usage(&c.usage)
			}
		case "error":
			c.isError = true
		}
		return d.skip()
	})
}

// nextChoice appends a zero choice, reusing the slot's tool-call slice.
func (c *chunk) nextChoice() *choice {
	if len(c.choices) < cap(c.choices) {
		c.choices = c.choices[:len(c.choices)+1]
		ch := &c.choices[len(c.choices)-1]
		*ch = choice{delta: delta{toolCalls: ch.delta.toolCalls[:0]}}
		return ch
	}
	c.choices = append(c.choices, choice{})
	return &c.choices[len(c.choices)-1]
}

func (d *chunkDecoder) choice(ch *choice) error {
	return d.object(func(key []byte) error {
		switch string(key) {
		case "index":
			return d.int(&ch.index)
		case "finish_reason":
			return d.finishReason(&ch.finishReason)
		case "delta":
			ch.delta = delta{toolCalls: ch.delta.toolCalls[:0]}
			if d.peek() == '{' {
				return d.delta(&ch.delta)
			}
		}
		return d.skip()
	})
}

func (d *chunkDecoder) delta(dl *delta) error {
	return d.object(func(key []byte) error {
		switch string(key) {
		case "content":
			return d.str(&dl.content)
		case "refusal":
			return d.str(&dl.refusal)
		case "reasoning_content":
			return d.str(&dl.reasoningContent)
		case "reasoning":
			return d.str(&dl.reasoning)
		case "tool_calls":
			dl.toolCalls = dl.toolCalls[:0]
			if d.peek() != '[' {
				return d.skip()
			}
			return d.array(func() error {
				if d.peek() != '{' {
					return d.skip()
				}
				dl.toolCalls = append(dl.toolCalls, toolCall{})
				return d.toolCall(&dl.toolCalls[len(dl.toolCalls)-1])
			})
		}
		return d.skip()
	})
}

func (d *chunkDecoder) toolCall(tc *toolCall) error {
	return d.object(func(key []byte) error {
		switch string(key) {
		case "index":
			return d.int(&tc.index)
		case "id":
			return d.str(&tc.id)
		case "function":
			tc.name, tc.args = "", ""
			if d.peek() == '{' {
				return d.object(func(key []byte) error {
					switch string(key) {
					case "name":
						return d.str(&tc.name)
					case "arguments":
						return d.str(&tc.args)
					}
					return d.skip()
				})
			}
		}
		return d.skip()
	})
}

func (d *chunkDecoder) usage(u *usage) error {
	return d.object(func(key []byte) error {
		switch string(key) {
		case "prompt_tokens":
			return d.int(&u.promptTokens)
		case "completion_tokens":
			return d.int(&u.completionTokens)
		case "completion_tokens_details":
			u.reasoningTokens = 0
			if d.peek() == '{' {
				return d.object(func(key []byte) error {
					if string(key) == "reasoning_tokens" {
						return d.int(&u.reasoningTokens)
					}
					return d.skip()
				})
			}
		}
		return d.skip()
	})
}

// finishReason reads a finish reason, without allocating for the values
// the API defines.
func (d *chunkDecoder) finishReason(dst *string) error {
	if d.peek() != '"' {
		*dst = ""
		return d.skip()
	}
	raw, plain, err := d.scanString()
	if err != nil {
		return err
	}
	switch {
	case !plain:
		d.scratch = unquote(d.scratch[:0], raw)
		*dst = string(d.scratch)
	case string(raw) == "stop":
		*dst = "stop"
	case string(raw) == "length":
		*dst = "length"
	case string(raw) == "tool_calls":
		*dst = "tool_calls"
	case string(raw) == "content_filter":
		*dst = "content_filter"
	case string(raw) == "function_call":
		*dst = "function_call"
	default:
		*dst = string(raw)
	}
	return nil
}

// str reads a string value into dst; null or another type sets it to "".
func (d *chunkDecoder) str(dst *string) error {
	if d.peek() != '"' {
		*dst = ""
		return d.skip()
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

// key reads an object key. The result aliases the input or the scratch
// buffer: valid until the next string is read.
func (d *chunkDecoder) key() ([]byte, error) {
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
func (d *chunkDecoder) scanString() (raw []byte, plain bool, err error) {
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

// int reads an integer value into dst. A number with a fraction or an
// exponent is truncated towards zero, as the SDK does; one out of range,
// null and any other type set dst to 0.
func (d *chunkDecoder) int(dst *int64) error {
	*dst = 0
	switch c := d.peek(); {
	case c == '-' || ('0' <= c && c <= '9'):
	default:
		return d.skip()
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
func (d *chunkDecoder) number() (integer bool, err error) {
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

// skip consumes one value of any type, validating it.
func (d *chunkDecoder) skip() error {
	switch c := d.peek(); {
	case c == '"':
		_, _, err := d.scanString()
		return err
	case c == '{':
		return d.object(func([]byte) error { return d.skip() })
	case c == '[':
		return d.array(d.skip)
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
