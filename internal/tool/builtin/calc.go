package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/agentchat/agentchat/internal/tool"
)

// Calculator limits. They keep one call cheap whatever the model sends.
const (
	maxExprLen  = 256  // bytes of expression
	maxDepth    = 64   // nesting of parentheses, unary signs and powers
	maxExponent = 1024 // |b| in a^b: past this, only overflow or 0 remain
)

// calculator is the calculator tool: arithmetic only, parsed by hand. It
// never evaluates code; the grammar below is all it understands.
type calculator struct{}

func (calculator) Spec() tool.Spec {
	return tool.Spec{
		Name: "calculator",
		Description: "Evaluate an arithmetic expression exactly as written. Supports numbers, + - * / % ^ (power, also **), " +
			"parentheses, unary minus, sqrt(x), abs(x), round(x) or round(x, digits), floor(x), ceil(x), min(a, b, ...), " +
			"max(a, b, ...), and the constants pi and e.",
		Parameters: json.RawMessage(`{
			"type": "object",
			"properties": {
				"expression": {"type": "string", "description": "The expression, e.g. (3 + 4) * 2 ^ 3 / sqrt(16)", "minLength": 1, "maxLength": 256}
			},
			"required": ["expression"],
			"additionalProperties": false
		}`),
		Confirm: tool.ConfirmNever,
		Source:  "builtin",
	}
}

func (calculator) Call(_ context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct {
		Expression string `json:"expression"`
	}
	if err := decodeArgs(args, &in); err != nil {
		return tool.Result{}, err
	}
	v, err := evaluate(in.Expression)
	if err != nil {
		return tool.Result{}, err
	}
	text := formatNumber(v)
	// Report the value we display, so Output and Content agree (0.1+0.2 is
	// 0.3 in both, not 0.30000000000000004 in one).
	shown, _ := strconv.ParseFloat(text, 64)
	out := struct {
		Expression string  `json:"expression"`
		Result     float64 `json:"result"`
	}{in.Expression, shown}
	return jsonResult(tool.StatusSuccess, in.Expression+" = "+text, out)
}

// formatNumber prints v with 15 significant digits (float64 carries about
// 15.9, so the last printed digit is always right), as a plain integer when
// it is one. Within a 15-digit rounding of the largest float64, rounding
// would overflow to an infinity; such a v is printed in full.
func formatNumber(v float64) string {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 15, 64), 64)
	if err != nil {
		r = v
	}
	if r == 0 {
		return "0" // also turns -0 into 0
	}
	if r == math.Trunc(r) && math.Abs(r) < 1e15 {
		return strconv.FormatFloat(r, 'f', -1, 64)
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}

// evaluate parses and evaluates expr. Grammar, lowest precedence first:
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/" | "%") unary }
//	unary   = ("-" | "+") unary | power
//	power   = primary [ ("^" | "**") unary ]    right-associative
//	primary = number | constant | name "(" expr { "," expr } ")" | "(" expr ")"
//
// Unary minus binds looser than ^, so -2^2 is -4, as in mathematics.
func evaluate(expr string) (float64, error) {
	if len(expr) > maxExprLen {
		return 0, fmt.Errorf("expression is too long (%d bytes, at most %d)", len(expr), maxExprLen)
	}
	if strings.TrimSpace(expr) == "" {
		return 0, errors.New("expression is empty")
	}
	p := &parser{src: expr}
	v, err := p.expr()
	if err != nil {
		return 0, err
	}
	p.skipSpace()
	if p.pos < len(p.src) {
		return 0, p.errorf("unexpected %s", p.describe())
	}
	return v, nil
}

type parser struct {
	src   string
	pos   int
	depth int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%s at position %d", fmt.Sprintf(format, args...), p.pos+1)
}

// describe names what is at the current position, for error messages.
func (p *parser) describe() string {
	if p.pos >= len(p.src) {
		return "end of expression"
	}
	r := []rune(p.src[p.pos:])[0]
	return strconv.QuoteRune(r)
}

func (p *parser) skipSpace() {
	for p.pos < len(p.src) && strings.IndexByte(" \t\r\n", p.src[p.pos]) >= 0 {
		p.pos++
	}
}

// accept consumes tok if it comes next.
func (p *parser) accept(tok string) bool {
	p.skipSpace()
	if strings.HasPrefix(p.src[p.pos:], tok) {
		p.pos += len(tok)
		return true
	}
	return false
}

// enter guards recursion so "((((…" cannot exhaust the stack.
func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.errorf("expression is nested too deeply")
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

func (p *parser) expr() (float64, error) {
	v, err := p.term()
	if err != nil {
		return 0, err
	}
	for {
		switch {
		case p.accept("+"):
			w, err := p.term()
			if err != nil {
				return 0, err
			}
			if v, err = p.finite(v + w); err != nil {
				return 0, err
			}
		case p.accept("-"):
			w, err := p.term()
			if err != nil {
				return 0, err
			}
			if v, err = p.finite(v - w); err != nil {
				return 0, err
			}
		default:
			return v, nil
		}
	}
}

func (p *parser) term() (float64, error) {
	v, err := p.unary()
	if err != nil {
		return 0, err
	}
	for {
		p.skipSpace()
		// "**" is power, not two multiplications.
		if strings.HasPrefix(p.src[p.pos:], "**") {
			return v, nil
		}
		var op byte
		switch {
		case p.accept("*"):
			op = '*'
		case p.accept("/"):
			op = '/'
		case p.accept("%"):
			op = '%'
		default:
			return v, nil
		}
		p.skipSpace()
		at := p.pos
		w, err := p.unary()
		if err != nil {
			return 0, err
		}
		switch op {
		case '*':
			v *= w
		case '/':
			if w == 0 {
				p.pos = at
				return 0, p.errorf("division by zero")
			}
			v /= w
		case '%':
			if w == 0 {
				p.pos = at
				return 0, p.errorf("modulo by zero")
			}
			v = math.Mod(v, w)
		}
		if v, err = p.finite(v); err != nil {
			return 0, err
		}
	}
}

func (p *parser) unary() (float64, error) {
	if err := p.enter(); err != nil {
		return 0, err
	}
	defer p.leave()
	switch {
	case p.accept("-"):
		v, err := p.unary()
		return -v, err
	case p.accept("+"):
		return p.unary()
	}
	return p.power()
}

func (p *parser) power() (float64, error) {
	base, err := p.primary()
	if err != nil {
		return 0, err
	}
	if !p.accept("**") && !p.accept("^") {
		return base, nil
	}
	p.skipSpace()
	at := p.pos
	exp, err := p.unary() // right-associative: 2^3^2 = 2^9
	if err != nil {
		return 0, err
	}
	if math.Abs(exp) > maxExponent {
		p.pos = at
		return 0, p.errorf("exponent %s is too large (at most %d)", formatNumber(exp), maxExponent)
	}
	if base < 0 && exp != math.Trunc(exp) {
		p.pos = at
		return 0, p.errorf("a negative number to a fractional power is not a real number")
	}
	if base == 0 && exp < 0 {
		p.pos = at
		return 0, p.errorf("division by zero (zero to a negative power)")
	}
	return p.finite(math.Pow(base, exp))
}

func (p *parser) primary() (float64, error) {
	p.skipSpace()
	if p.pos >= len(p.src) {
		return 0, p.errorf("expression ends too early")
	}
	c := p.src[p.pos]
	switch {
	case c == '(':
		p.pos++
		if err := p.enter(); err != nil {
			return 0, err
		}
		defer p.leave()
		v, err := p.expr()
		if err != nil {
			return 0, err
		}
		if !p.accept(")") {
			return 0, p.errorf("expected ')' but found %s", p.describe())
		}
		return v, nil
	case isDigit(c) || c == '.':
		return p.number()
	case isLetter(c):
		return p.name()
	}
	return 0, p.errorf("unexpected %s", p.describe())
}

func (p *parser) number() (float64, error) {
	start := p.pos
	for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
		p.pos++
	}
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		p.pos++
		for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
			p.pos++
		}
	}
	// An exponent only if digits follow: "2e3" is 2000, "2e" is an error
	// below rather than a silent 2 followed by the constant e.
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		i := p.pos + 1
		if i < len(p.src) && (p.src[i] == '+' || p.src[i] == '-') {
			i++
		}
		if i < len(p.src) && isDigit(p.src[i]) {
			for i < len(p.src) && isDigit(p.src[i]) {
				i++
			}
			p.pos = i
		}
	}
	lit := p.src[start:p.pos]
	v, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		p.pos = start
		if errors.Is(err, strconv.ErrRange) {
			return 0, p.errorf("number %s is out of range", lit)
		}
		return 0, p.errorf("malformed number %q", lit)
	}
	return v, nil
}

func (p *parser) name() (float64, error) {
	start := p.pos
	for p.pos < len(p.src) && (isLetter(p.src[p.pos]) || isDigit(p.src[p.pos])) {
		p.pos++
	}
	name := strings.ToLower(p.src[start:p.pos])
	switch name {
	case "pi":
		return math.Pi, nil
	case "e":
		return math.E, nil
	}
	fn, ok := functions[name]
	if !ok {
		p.pos = start
		return 0, p.errorf("unknown name %q", p.src[start:start+len(name)])
	}
	if !p.accept("(") {
		return 0, p.errorf("expected '(' after %s", name)
	}
	if err := p.enter(); err != nil {
		return 0, err
	}
	defer p.leave()
	var args []float64
	if !p.accept(")") {
		for {
			v, err := p.expr()
			if err != nil {
				return 0, err
			}
			args = append(args, v)
			if p.accept(")") {
				break
			}
			if !p.accept(",") {
				return 0, p.errorf("expected ',' or ')' but found %s", p.describe())
			}
		}
	}
	if len(args) < fn.min || (fn.max >= 0 && len(args) > fn.max) {
		p.pos = start
		return 0, p.errorf("%s takes %s, got %d", name, fn.arity(), len(args))
	}
	v, err := fn.eval(args)
	if err != nil {
		p.pos = start
		return 0, p.errorf("%s: %v", name, err)
	}
	return p.finite(v)
}

// finite refuses results float64 cannot hold: an infinity or NaN would
// print as nonsense and poison every later step.
func (p *parser) finite(v float64) (float64, error) {
	if math.IsInf(v, 0) {
		return 0, p.errorf("result is too large")
	}
	if math.IsNaN(v) {
		return 0, p.errorf("result is not a number")
	}
	return v, nil
}

type function struct {
	min, max int // argument count; max -1 means any
	eval     func([]float64) (float64, error)
}

func (f function) arity() string {
	switch {
	case f.max < 0:
		return fmt.Sprintf("at least %d argument(s)", f.min)
	case f.min == f.max:
		return fmt.Sprintf("%d argument(s)", f.min)
	}
	return fmt.Sprintf("%d to %d arguments", f.min, f.max)
}

func one(f func(float64) float64) function {
	return function{1, 1, func(a []float64) (float64, error) { return f(a[0]), nil }}
}

var functions = map[string]function{
	"abs":   one(math.Abs),
	"floor": one(math.Floor),
	"ceil":  one(math.Ceil),
	"sqrt": {1, 1, func(a []float64) (float64, error) {
		if a[0] < 0 {
			return 0, errors.New("square root of a negative number")
		}
		return math.Sqrt(a[0]), nil
	}},
	"round": {1, 2, func(a []float64) (float64, error) {
		if len(a) == 1 {
			return math.Round(a[0]), nil
		}
		d := a[1]
		if d != math.Trunc(d) || d < 0 || d > 15 {
			return 0, errors.New("digits must be a whole number from 0 to 15")
		}
		scale := math.Pow(10, d)
		return math.Round(a[0]*scale) / scale, nil
	}},
	"min": {1, -1, func(a []float64) (float64, error) {
		m := a[0]
		for _, v := range a[1:] {
			m = math.Min(m, v)
		}
		return m, nil
	}},
	"max": {1, -1, func(a []float64) (float64, error) {
		m := a[0]
		for _, v := range a[1:] {
			m = math.Max(m, v)
		}
		return m, nil
	}},
}

func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { c &^= 0x20; return 'A' <= c && c <= 'Z' }
