package local

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// The visible text of a structured answer is the decoded "answer" string,
// however the model's text was chunked.
func TestAnswerTextAnyChunking(t *testing.T) {
	t.Parallel()
	tests := []struct{ raw, want string }{
		{`{"answer":"Hello, world."}`, "Hello, world."},
		{` {"status":"success","key_points":["a","b {"],"answer":"Line 1\nLine \"2\" \\ \/ \t end","result_type":"unknown"}`, "Line 1\nLine \"2\" \\ / \t end"},
		{`{"meta":{"answer":"nested"},"answer":"top \u00e9\ud83d\ude00!"}`, "top é😀!"},
		{`{"n":12,"ok":true,"answer":"after scalars"}`, "after scalars"},
		{`{"answer":"中文回答"}`, "中文回答"},
		{`Plain text, not JSON.`, "Plain text, not JSON."},
		{`  {"no_answer":1}`, ""},
	}
	for _, tt := range tests {
		whole := visibleText(tt.raw)
		if whole != tt.want {
			t.Errorf("%s: got %q, want %q", tt.raw, whole, tt.want)
		}
		// Every split into three chunks gives the same text.
		for i := 0; i <= len(tt.raw); i++ {
			for j := i; j <= len(tt.raw); j++ {
				var a answerText
				got := a.Feed(tt.raw[:i]) + a.Feed(tt.raw[i:j]) + a.Feed(tt.raw[j:])
				if got != tt.want {
					t.Fatalf("%s split at %d,%d: got %q", tt.raw, i, j, got)
				}
			}
		}
	}
}

func TestParseAnswer(t *testing.T) {
	t.Parallel()
	a := ParseAnswer(`{"answer":"Done: 3 orders.","key_points":["3 orders",{"label":"all paid"}],"result_type":"execution_report",` +
		`"suggested_actions":["Export them"],"status":"partial_success","ui_hints":{"blocks":[{"kind":"text"}]}}`)
	if a.Answer != "Done: 3 orders." || !slices.Equal(a.KeyPoints, []string{"3 orders", "all paid"}) || a.ResultType != "execution_report" ||
		!slices.Equal(a.SuggestedActions, []string{"Export them"}) || a.Status != "partial_success" || !json.Valid(a.UIHints) {
		t.Errorf("parsed %+v", a)
	}
	// Bad or missing fields get derived values; plain text is derived from.
	a = ParseAnswer(`{"answer":"Which week do you mean?","result_type":"guess","status":7,"ui_hints":null}`)
	if a.ResultType != "clarification" || a.Status != "success" || a.UIHints != nil || a.KeyPoints == nil || a.SuggestedActions == nil {
		t.Errorf("derived %+v", a)
	}
	a = ParseAnswer("Here:\n- one\n- two")
	if a.Answer != "Here:\n- one\n- two" || !slices.Equal(a.KeyPoints, []string{"one", "two"}) {
		t.Errorf("plain %+v", a)
	}
	if a := ParseAnswer(`{"answer": "cut`); a.Answer != "cut" {
		t.Errorf("truncated JSON shows %q", a.Answer)
	}
	if a := ParseAnswer(`{"other":"x"}`); !strings.Contains(a.Answer, "other") {
		t.Errorf("answerless object shows %q", a.Answer)
	}
}
