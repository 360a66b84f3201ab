package uischema

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/event"
)

var answer = event.Answer{
	Status:           "success",
	Answer:           "42 paid orders this week.",
	KeyPoints:        []string{"42 orders", " ", "1234.50 EUR"},
	ResultType:       "execution_report",
	SuggestedActions: []string{"Open the order list"},
}

func TestCompile(t *testing.T) {
	t.Parallel()
	defaultLayout := `{"version":"1","blocks":[{"kind":"text","text":"42 paid orders this week."},{"kind":"key_points","items":["42 orders","1234.50 EUR"]},{"kind":"actions","actions":[{"label":"Open the order list"}]}]}`
	tests := []struct {
		name  string
		hints string
		ans   event.Answer
		want  string
	}{
		{"no hints", ``, answer, defaultLayout},
		{"null hints", `null`, answer, defaultLayout},
		{"not json", `{"blocks":[`, answer, defaultLayout},
		{"a string", `"table please"`, answer, defaultLayout},
		{"empty blocks", `{"blocks":[]}`, answer, defaultLayout},
		{"blocks not a list", `{"blocks":{"kind":"text"}}`, answer, defaultLayout},
		{"empty answer, no hints", ``, event.Answer{}, `{"version":"1","blocks":[]}`},
		{
			"text defaults to the answer",
			`{"blocks":[{"kind":"text"}]}`, answer,
			`{"version":"1","blocks":[{"kind":"text","text":"42 paid orders this week."}]}`,
		},
		{
			"type is an alias of kind, bare array",
			`[{"type":"text","text":"hello","title":"Greeting"}]`, answer,
			`{"version":"1","blocks":[{"kind":"text","title":"Greeting","text":"hello"}]}`,
		},
		{
			"single hint object",
			`{"kind":"list","items":["a",2,"  "],"ordered":true}`, answer,
			`{"version":"1","blocks":[{"kind":"list","ordered":true,"items":["a","2"]}]}`,
		},
		{
			"key_points from the answer, actions from objects",
			`{"blocks":[{"kind":"key_points","title":"Facts"},{"kind":"actions","actions":["Retry",{"label":"Open","value":"open_orders"},{"label":"Go","action":"go"}]}]}`, answer,
			`{"version":"1","blocks":[{"kind":"key_points","title":"Facts","items":["42 orders","1234.50 EUR"]},{"kind":"actions","actions":[{"label":"Retry"},{"label":"Open","value":"open_orders"},{"label":"Go","value":"go"}]}]}`,
		},
		{
			"table",
			`{"blocks":[{"kind":"table","title":"Orders","columns":["day","count","paid"],"rows":[["Mon",12,true],["Tue",null,false],["Wed",12345678901234567890,true]]}]}`, answer,
			`{"version":"1","blocks":[{"kind":"table","title":"Orders","columns":["day","count","paid"],"rows":[["Mon",12,true],["Tue","",false],["Wed",12345678901234567890,true]]}]}`,
		},
		{
			"ragged table degrades to its title",
			`{"blocks":[{"kind":"table","title":"Orders","columns":["day","count"],"rows":[["Mon"]]}]}`, answer,
			`{"version":"1","blocks":[{"kind":"text","text":"Orders"}]}`,
		},
		{
			"table with an object cell degrades",
			`[{"kind":"table","columns":["a"],"rows":[[{"x":1}]],"text":"see attachment"}]`, answer,
			`{"version":"1","blocks":[{"kind":"text","text":"see attachment"}]}`,
		},
		{
			"chart",
			`{"blocks":[{"kind":"chart","chart_type":"bar","labels":["Mon","Tue"],"series":[{"name":"orders","data":[12,30.5]}]}]}`, answer,
			`{"version":"1","blocks":[{"kind":"chart","chart_type":"bar","labels":["Mon","Tue"],"series":[{"name":"orders","data":[12,30.5]}]}]}`,
		},
		{
			"chart with mismatched series degrades to items",
			`{"blocks":[{"kind":"chart","chartType":"line","title":"Trend","labels":["Mon","Tue"],"series":[{"name":"x","data":[1]}],"items":["Mon: 1"]}]}`, answer,
			`{"version":"1","blocks":[{"kind":"text","text":"Trend\n- Mon: 1"}]}`,
		},
		{
			"unknown chart type degrades",
			`{"blocks":[{"kind":"chart","chart_type":"radar","labels":["a"],"series":[{"name":"x","data":[1]}]}]}`, answer,
			defaultLayout,
		},
		{
			"unknown kind keeps its text; a hint with no text is dropped",
			`{"blocks":[{"kind":"map","content":"Berlin office"},{"kind":"video"},{"kind":"text","text":"done"}]}`, answer,
			`{"version":"1","blocks":[{"kind":"text","text":"Berlin office"},{"kind":"text","text":"done"}]}`,
		},
		{
			"everything unusable falls back to the default layout",
			`{"blocks":[{"kind":"video"},{"kind":"list","items":[]},42]}`, answer,
			defaultLayout,
		},
		{
			"null fields count as absent",
			`{"blocks":[{"kind":"key_points","items":null},{"kind":"actions","actions":null}]}`, answer,
			`{"version":"1","blocks":[{"kind":"key_points","items":["42 orders","1234.50 EUR"]},{"kind":"actions","actions":[{"label":"Open the order list"}]}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(Compile(json.RawMessage(tt.hints), tt.ans))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Compile(%s)\n got %s\nwant %s", tt.hints, got, tt.want)
			}
			if strings.Contains(string(got), "null") {
				t.Errorf("null in %s", got)
			}
		})
	}
}

func TestCompileLimits(t *testing.T) {
	t.Parallel()
	var blocks []string
	for range MaxBlocks + 5 {
		blocks = append(blocks, `{"kind":"text","text":"x"}`)
	}
	s := Compile(json.RawMessage(`[`+strings.Join(blocks, ",")+`]`), answer)
	if len(s.Blocks) != MaxBlocks {
		t.Errorf("blocks = %d, want %d", len(s.Blocks), MaxBlocks)
	}
	var rows []string
	for range MaxRows + 1 {
		rows = append(rows, `[1]`)
	}
	s = Compile(json.RawMessage(`{"kind":"table","columns":["n"],"rows":[`+strings.Join(rows, ",")+`]}`), answer)
	if len(s.Blocks) != 1 || len(s.Blocks[0].Rows) != MaxRows {
		t.Errorf("table rows not capped: %+v", s.Blocks)
	}
}

// The same hints and answer always compile to the same bytes: the events
// stream and the history endpoint rely on it.
func TestCompileDeterministic(t *testing.T) {
	t.Parallel()
	hints := json.RawMessage(`{"blocks":[{"kind":"table","columns":["a","b"],"rows":[[1,"x"]]},{"kind":"key_points"}]}`)
	first, _ := json.Marshal(Compile(hints, answer))
	for range 20 {
		again, _ := json.Marshal(Compile(hints, answer))
		if string(again) != string(first) {
			t.Fatalf("not deterministic:\n%s\n%s", first, again)
		}
	}
}
