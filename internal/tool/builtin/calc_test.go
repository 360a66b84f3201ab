package builtin

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentchat/agentchat/internal/tool"
)

func TestEvaluate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr string
		want float64
	}{
		{"1 + 2", 3},
		{"2 + 3 * 4", 14},
		{"(2 + 3) * 4", 20},
		{"10 - 4 - 3", 3},   // left-associative
		{"100 / 10 / 5", 2}, // left-associative
		{"7 % 3", 1},
		{"-7 % 3", -1},
		{"5.5 % 2", 1.5},
		{"2 ^ 10", 1024},
		{"2 ** 10", 1024},
		{"2 ^ 3 ^ 2", 512}, // right-associative
		{"-2 ^ 2", -4},     // unary minus binds looser than ^
		{"(-2) ^ 2", 4},
		{"2 ^ -1", 0.5},
		{"--3", 3},
		{"-(1 + 2)", -3},
		{"+4", 4},
		{"3 * -2", -6},
		{".5 + 1.", 1.5},
		{"1e3 + 2.5E-1", 1000.25},
		{"sqrt(16) + abs(-3)", 7},
		{"round(2.5)", 3},
		{"round(-2.5)", -3},
		{"round(3.14159, 2)", 3.14},
		{"floor(-1.5) + ceil(1.2)", 0},
		{"min(3, 1, 2)", 1},
		{"max(3, 1, 2)", 3},
		{"max(-1)", -1},
		{"pi", math.Pi},
		{"2 * e", 2 * math.E},
		{"SQRT(4) + PI - pi", 2},
		{" \t( 1 +\n2 ) ", 3},
		{"0.1 + 0.2", 0.1 + 0.2},
		{"1.0000001 ^ 1000", math.Pow(1.0000001, 1000)},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			got, err := evaluate(tt.expr)
			if err != nil {
				t.Fatalf("evaluate(%q): %v", tt.expr, err)
			}
			if math.Abs(got-tt.want) > 1e-12*math.Max(1, math.Abs(tt.want)) {
				t.Fatalf("evaluate(%q) = %v, want %v", tt.expr, got, tt.want)
			}
		})
	}
}

func TestEvaluateErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr string
		want string
	}{
		{"1 / 0", "division by zero at position 5"},
		{"1 / (2 - 2)", "division by zero"},
		{"5 % 0", "modulo by zero"},
		{"0 ^ -1", "zero to a negative power"},
		{"", "expression is empty"},
		{"   ", "expression is empty"},
		{strings.Repeat("1+", 128) + "1", "too long"},
		{strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100), "nested too deeply"},
		{strings.Repeat("-", 100) + "1", "nested too deeply"},
		{"2 ^ 100000", "exponent 100000 is too large"},
		{"10 ^ 400", "result is too large"},
		{"1e400", "out of range"},
		{"9^9^9", "too large"},
		{"(-8) ^ 0.5", "negative number to a fractional power"},
		{"sqrt(-1)", "square root of a negative number"},
		{"1 +", "ends too early"},
		{"(1 + 2", "expected ')'"},
		{"1 + 2)", "unexpected ')'"},
		{"2 3", "unexpected '3'"},
		{"2e", "unexpected 'e'"}, // no implicit multiplication by the constant e
		{"1..2", "unexpected '.'"},
		{"foo(1)", `unknown name "foo"`},
		{"x + 1", `unknown name "x"`},
		{"sqrt 4", "expected '(' after sqrt"},
		{"sqrt(1, 2)", "sqrt takes 1 argument(s), got 2"},
		{"min()", "min takes at least 1 argument(s), got 0"},
		{"round(1, 0.5)", "digits must be a whole number"},
		{"max(1; 2)", "expected ',' or ')'"},
		{"__import__('os')", "unexpected '_'"},
		{"1 + \"2\"", `unexpected '"'`},
		{"2 × 3", "unexpected '×'"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			got, err := evaluate(tt.expr)
			if err == nil {
				t.Fatalf("evaluate(%q) = %v, want error %q", tt.expr, got, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("evaluate(%q) error %q, want it to contain %q", tt.expr, err, tt.want)
			}
		})
	}
}

func TestCalculatorTool(t *testing.T) {
	t.Parallel()
	r := setup(t, Config{})
	tests := []struct {
		name        string
		args        any
		wantContent string
		wantResult  float64
		wantError   string
	}{
		{"float noise hidden", map[string]any{"expression": "0.1 + 0.2"}, "0.1 + 0.2 = 0.3", 0.3, ""},
		{"integer shown plainly", map[string]any{"expression": "2^40"}, "2^40 = 1099511627776", 1099511627776, ""},
		{"negative zero", map[string]any{"expression": "-0"}, "-0 = 0", 0, ""},
		{"large", map[string]any{"expression": "10^20"}, "10^20 = 1e+20", 1e20, ""},
		{"largest", map[string]any{"expression": "1.7976931348623157e308"}, "1.7976931348623157e308 = 1.7976931348623157e+308", math.MaxFloat64, ""},
		{"rounds past the largest", map[string]any{"expression": "-1.7976931348623155e308"}, "-1.7976931348623155e308 = -1.7976931348623155e+308", -1.7976931348623155e308, ""},
		{"error", map[string]any{"expression": "1/0"}, "", 0, "division by zero"},
		{"missing", map[string]any{}, "", 0, "invalid arguments: missing property 'expression'"},
		{"too long for the schema", map[string]any{"expression": strings.Repeat("1", 300)}, "", 0, "invalid arguments: expression:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := call(t, r, "calculator", tt.args)
			if tt.wantError != "" {
				if res.Status != tool.StatusFailure || !strings.Contains(res.Error, tt.wantError) {
					t.Fatalf("result %+v, want failure %q", res, tt.wantError)
				}
				return
			}
			var out struct {
				Result float64 `json:"result"`
			}
			if err := json.Unmarshal(res.Output, &out); err != nil || res.Status != tool.StatusSuccess {
				t.Fatalf("result %+v (%v)", res, err)
			}
			if res.Content != tt.wantContent || out.Result != tt.wantResult {
				t.Fatalf("got %q / %v, want %q / %v", res.Content, out.Result, tt.wantContent, tt.wantResult)
			}
		})
	}
}

// FuzzEvaluate holds the calculator to what a model's arbitrary expression
// may expect: an answer or an error, never a panic; an answer is finite,
// the tool reports it as it shows it, and the shown number reads back as
// the same number, so the model can reuse the result in its next
// expression; an error is readable text. Seeds: testdata/fuzz/FuzzEvaluate.
func FuzzEvaluate(f *testing.F) {
	f.Fuzz(func(t *testing.T, expr string) {
		// The expression as the tool receives it: JSON arguments, in which
		// bytes that are not UTF-8 arrive as U+FFFD.
		args := mustJSON(t, map[string]string{"expression": expr})
		var in struct{ Expression string }
		if err := json.Unmarshal(args, &in); err != nil {
			t.Fatal(err)
		}
		expr = in.Expression
		v, err := evaluate(expr)
		res, callErr := calculator{}.Call(t.Context(), args)
		if err != nil {
			if msg := err.Error(); msg == "" || !utf8.ValidString(msg) {
				t.Fatalf("evaluate(%q): error %q is not readable text", expr, msg)
			}
			if callErr == nil || callErr.Error() != err.Error() {
				t.Fatalf("evaluate(%q) failed with %v but the tool answered %+v, %v", expr, err, res, callErr)
			}
			return
		}
		if math.IsInf(v, 0) || math.IsNaN(v) {
			t.Fatalf("evaluate(%q) = %v", expr, v)
		}
		if callErr != nil {
			t.Fatalf("evaluate(%q) = %v but the tool failed: %v", expr, v, callErr)
		}
		shown := formatNumber(v)
		if res.Content != expr+" = "+shown {
			t.Fatalf("evaluate(%q): content %q, want it to end in = %s", expr, res.Content, shown)
		}
		var out struct {
			Result float64 `json:"result"`
		}
		if err := json.Unmarshal(res.Output, &out); err != nil || formatNumber(out.Result) != shown {
			t.Fatalf("evaluate(%q): output %s (%v), want the shown %s", expr, res.Output, err, shown)
		}
		again, err := evaluate(shown)
		if err != nil || formatNumber(again) != shown {
			t.Fatalf("evaluate(%q) shows %s, which reads back as %v (%v)", expr, shown, again, err)
		}
	})
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
