// Package uischema is the one ui_schema compiler (seed 001 §5.2): it turns a
// worker's ui_hints into the versioned, renderable ui_schema that clients
// consume. The AG-UI events stream (TEXT_MESSAGE_END in seed mode) and the
// history endpoint both call Compile, so one message always yields the same
// ui_schema wherever a client reads it.
//
// # Output (version "1")
//
//	{"version":"1","blocks":[block, …]}
//
// Every block has a "kind"; the other fields depend on it and absent ones are
// omitted (never null):
//
//	text        {"kind":"text","text":"…"}
//	key_points  {"kind":"key_points","title"?,"items":["…"]}
//	list        {"kind":"list","title"?,"ordered"?:true,"items":["…"]}
//	table       {"kind":"table","title"?,"columns":["…"],"rows":[[cell,…],…]}
//	            cells are strings, numbers or booleans; each row has one cell per column
//	chart       {"kind":"chart","title"?,"chart_type":"bar|line|area|pie",
//	             "labels":["…"],"series":[{"name":"…","data":[number,…]}]}
//	            each series has one number per label
//	actions     {"kind":"actions","title"?,"actions":[{"label":"…","value"?:"…"}]}
//
// # Input (ui_hints)
//
// Hints are JSON in one of three shapes: {"blocks":[hint,…]}, a bare array
// [hint,…], or a single hint object. A hint is an object naming its kind in
// "kind" (or "type") with the fields above. Conveniences:
//   - a text hint without "text" shows the answer text;
//   - a key_points hint without "items" shows the answer's key_points;
//   - an actions hint without items shows the answer's suggested_actions;
//     actions may be given as strings or as {"label","value"} (or "action")
//     objects, in "actions" or "items";
//   - a list's items and a table's column names may be strings or numbers.
//
// # Degradation
//
// Compile never fails. Hints that are not valid JSON, or not one of the
// shapes above, are ignored and the default layout is used. A hint of an
// unknown kind, or one that breaks its kind's rules (a ragged table, a series
// whose length does not match its labels, an unknown chart_type), becomes a
// text block holding whatever readable text it carried (title, text, content,
// string items), or is dropped when it carried none. If nothing usable
// remains, the default layout is used: the answer text, then its key points,
// then its suggested actions, each only when present.
//
// Limits keep a runaway worker from producing an unrenderable schema: at most
// MaxBlocks blocks, MaxItems items or actions per block, MaxColumns columns,
// MaxRows rows, MaxLabels labels and MaxSeries series; the excess is cut.
package uischema

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/agentchat/agentchat/internal/event"
)

// Version is the ui_schema version this package writes. A change a client
// could not render under the old rules gets a new version.
const Version = "1"

// Block kinds.
const (
	KindText      = "text"
	KindKeyPoints = "key_points"
	KindList      = "list"
	KindTable     = "table"
	KindChart     = "chart"
	KindActions   = "actions"
)

// Limits applied by Compile.
const (
	MaxBlocks  = 32
	MaxItems   = 64
	MaxColumns = 24
	MaxRows    = 500
	MaxLabels  = 200
	MaxSeries  = 12
)

// Schema is a compiled ui_schema.
type Schema struct {
	Version string  `json:"version"`
	Blocks  []Block `json:"blocks"` // never nil: an empty schema is "blocks":[]
}

// Block is one renderable unit. Only the fields of its Kind are set.
type Block struct {
	Kind      string              `json:"kind"`
	Title     string              `json:"title,omitempty"`
	Text      string              `json:"text,omitempty"`
	Ordered   bool                `json:"ordered,omitempty"`
	Items     []string            `json:"items,omitempty"`
	Columns   []string            `json:"columns,omitempty"`
	Rows      [][]json.RawMessage `json:"rows,omitempty"`
	ChartType string              `json:"chart_type,omitempty"`
	Labels    []string            `json:"labels,omitempty"`
	Series    []Series            `json:"series,omitempty"`
	Actions   []Action            `json:"actions,omitempty"`
}

// Series is one named line, bar group or pie of a chart.
type Series struct {
	Name string    `json:"name"`
	Data []float64 `json:"data"`
}

// Action is a follow-up the user can pick.
type Action struct {
	Label string `json:"label"`
	Value string `json:"value,omitempty"`
}

var chartTypes = map[string]bool{"bar": true, "line": true, "area": true, "pie": true}

// Compile turns hints into a ui_schema for answer. It never fails: see the
// package documentation for how bad hints degrade.
func Compile(hints json.RawMessage, answer event.Answer) Schema {
	s := Schema{Version: Version, Blocks: []Block{}}
	for _, h := range hintList(hints) {
		if len(s.Blocks) == MaxBlocks {
			break
		}
		if b, ok := compileHint(h, answer); ok {
			s.Blocks = append(s.Blocks, b)
		}
	}
	if len(s.Blocks) == 0 {
		s.Blocks = defaultBlocks(answer)
	}
	return s
}

// defaultBlocks is the layout of an answer without usable hints.
func defaultBlocks(a event.Answer) []Block {
	out := []Block{}
	if a.Answer != "" {
		out = append(out, Block{Kind: KindText, Text: a.Answer})
	}
	if items := cleanStrings(a.KeyPoints); len(items) > 0 {
		out = append(out, Block{Kind: KindKeyPoints, Items: items})
	}
	if acts := actionsFromStrings(a.SuggestedActions); len(acts) > 0 {
		out = append(out, Block{Kind: KindActions, Actions: acts})
	}
	return out
}

// hint is one decoded hint object, its values kept raw so each kind decides
// what a field may hold.
type hint map[string]json.RawMessage

// hintList decodes the three accepted hint shapes; anything else yields none.
func hintList(raw json.RawMessage) []hint {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	var list []json.RawMessage
	switch raw[0] {
	case '[':
		if json.Unmarshal(raw, &list) != nil {
			return nil
		}
	case '{':
		var obj hint
		if json.Unmarshal(raw, &obj) != nil {
			return nil
		}
		blocks, ok := obj["blocks"]
		if !ok {
			return []hint{obj}
		}
		if json.Unmarshal(blocks, &list) != nil {
			return nil
		}
	default:
		return nil
	}
	out := make([]hint, 0, len(list))
	for _, item := range list {
		var h hint
		if json.Unmarshal(item, &h) == nil && h != nil {
			out = append(out, h)
		}
	}
	return out
}

func compileHint(h hint, a event.Answer) (Block, bool) {
	kind := h.str("kind")
	if kind == "" {
		kind = h.str("type")
	}
	title := h.str("title")
	var (
		b  Block
		ok bool
	)
	switch kind {
	case KindText:
		b, ok = compileText(h, a)
	case KindKeyPoints:
		b, ok = compileKeyPoints(h, a)
	case KindList:
		b, ok = compileList(h)
	case KindTable:
		b, ok = compileTable(h)
	case KindChart:
		b, ok = compileChart(h)
	case KindActions:
		b, ok = compileActions(h, a)
	}
	if !ok {
		return degrade(h)
	}
	b.Title = title
	return b, true
}

func compileText(h hint, a event.Answer) (Block, bool) {
	text, present := h.strOK("text")
	if !present {
		text, present = h.strOK("content")
	}
	if !present {
		text = a.Answer
	}
	if text == "" {
		return Block{}, false
	}
	return Block{Kind: KindText, Text: text}, true
}

func compileKeyPoints(h hint, a event.Answer) (Block, bool) {
	items, present, valid := h.strings("items")
	if !present {
		items, valid = cleanStrings(a.KeyPoints), true
	}
	if !valid || len(items) == 0 {
		return Block{}, false
	}
	return Block{Kind: KindKeyPoints, Items: items}, true
}

func compileList(h hint) (Block, bool) {
	items, _, valid := h.strings("items")
	if !valid || len(items) == 0 {
		return Block{}, false
	}
	var ordered bool
	if raw, ok := h["ordered"]; ok && json.Unmarshal(raw, &ordered) != nil {
		return Block{}, false
	}
	return Block{Kind: KindList, Items: items, Ordered: ordered}, true
}

func compileTable(h hint) (Block, bool) {
	cols, _, valid := h.strings("columns")
	if !valid || len(cols) == 0 || len(cols) > MaxColumns {
		return Block{}, false
	}
	var rows [][]json.RawMessage
	if json.Unmarshal(h["rows"], &rows) != nil || len(rows) == 0 {
		return Block{}, false
	}
	if len(rows) > MaxRows {
		rows = rows[:MaxRows]
	}
	for _, row := range rows {
		if len(row) != len(cols) {
			return Block{}, false
		}
		for i, cell := range row {
			c, ok := scalar(cell)
			if !ok {
				return Block{}, false
			}
			row[i] = c
		}
	}
	return Block{Kind: KindTable, Columns: cols, Rows: rows}, true
}

func compileChart(h hint) (Block, bool) {
	ct := h.str("chart_type")
	if ct == "" {
		ct = h.str("chartType")
	}
	if !chartTypes[ct] {
		return Block{}, false
	}
	labels, _, valid := h.strings("labels")
	if !valid || len(labels) == 0 || len(labels) > MaxLabels {
		return Block{}, false
	}
	var series []Series
	if json.Unmarshal(h["series"], &series) != nil || len(series) == 0 || len(series) > MaxSeries {
		return Block{}, false
	}
	for _, s := range series {
		if len(s.Data) != len(labels) {
			return Block{}, false
		}
	}
	return Block{Kind: KindChart, ChartType: ct, Labels: labels, Series: series}, true
}

func compileActions(h hint, a event.Answer) (Block, bool) {
	raw, present := h["actions"]
	if !present || isNull(raw) {
		raw, present = h["items"]
	}
	present = present && !isNull(raw)
	var acts []Action
	if present {
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil {
			return Block{}, false
		}
		for _, item := range list {
			act, ok := action(item)
			if !ok {
				return Block{}, false
			}
			if act.Label != "" && len(acts) < MaxItems {
				acts = append(acts, act)
			}
		}
	} else {
		acts = actionsFromStrings(a.SuggestedActions)
	}
	if len(acts) == 0 {
		return Block{}, false
	}
	return Block{Kind: KindActions, Actions: acts}, true
}

// action reads "label", {"label","value"} or {"label","action"}.
func action(raw json.RawMessage) (Action, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return Action{Label: strings.TrimSpace(s)}, true
	}
	var h hint
	if json.Unmarshal(raw, &h) != nil || h == nil {
		return Action{}, false
	}
	v := h.str("value")
	if v == "" {
		v = h.str("action")
	}
	return Action{Label: strings.TrimSpace(h.str("label")), Value: v}, true
}

// degrade keeps the readable text of a hint that could not be compiled.
func degrade(h hint) (Block, bool) {
	var lines []string
	for _, k := range []string{"title", "text", "content"} {
		if s := strings.TrimSpace(h.str(k)); s != "" {
			lines = append(lines, s)
		}
	}
	if items, _, ok := h.strings("items"); ok {
		for _, it := range items {
			lines = append(lines, "- "+it)
		}
	}
	if len(lines) == 0 {
		return Block{}, false
	}
	return Block{Kind: KindText, Text: strings.Join(lines, "\n")}, true
}

func (h hint) strOK(k string) (string, bool) {
	var s string
	raw, ok := h[k]
	if !ok || isNull(raw) || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func (h hint) str(k string) string { s, _ := h.strOK(k); return s }

// strings reads a list of strings (numbers are written as text). present says
// whether the key exists; valid whether its value was such a list.
func (h hint) strings(k string) (items []string, present, valid bool) {
	raw, ok := h[k]
	if !ok || isNull(raw) {
		return nil, false, true
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, true, false
	}
	for _, item := range list {
		var s string
		if json.Unmarshal(item, &s) != nil {
			var n json.Number
			if json.Unmarshal(item, &n) != nil {
				return nil, true, false
			}
			s = n.String()
		}
		if s = strings.TrimSpace(s); s != "" && len(items) < MaxItems {
			items = append(items, s)
		}
	}
	return items, true, true
}

// scalar re-encodes a table cell: strings, numbers and booleans pass, null
// becomes "" (no null reaches a client), anything else is refused.
func scalar(raw json.RawMessage) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return nil, false
	case string(raw) == "null":
		return json.RawMessage(`""`), true
	case string(raw) == "true", string(raw) == "false":
		return raw, true
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
		b, _ := json.Marshal(s)
		return b, true
	default:
		// Numbers keep their text: re-formatting would round large integers.
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return nil, false
		}
		return json.RawMessage(n.String()), true
	}
}

// isNull treats an explicit null like an absent key.
func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func cleanStrings(in []string) []string {
	var out []string
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" && len(out) < MaxItems {
			out = append(out, s)
		}
	}
	return out
}

func actionsFromStrings(in []string) []Action {
	var out []Action
	for _, s := range cleanStrings(in) {
		out = append(out, Action{Label: s})
	}
	return out
}
