package config

import (
	"bytes"
	"flag"
	"io"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/compaction"
	"github.com/agentchat/agentchat/internal/engine/chain"
	"github.com/agentchat/agentchat/internal/retrieval"
)

var update = flag.Bool("update", false, "rewrite the README's settings table from the table in options.go")

const (
	readmePath  = "../../README.md"
	readmeBegin = "<!-- settings: generated from internal/config/options.go by `go test ./internal/config -run TestREADME -update` -->\n"
	readmeEnd   = "<!-- end of settings -->\n"
)

// The README's settings table is the table of options.go, rendered:
// `go test ./internal/config -run TestREADME -update` rewrites it.
func TestREADMESettingsTable(t *testing.T) {
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i, j := strings.Index(s, readmeBegin), strings.Index(s, readmeEnd)
	if i < 0 || j < i {
		t.Fatalf("README lacks the settings markers %q … %q", readmeBegin, readmeEnd)
	}
	want := readmeBegin + "\n" + Markdown() + "\n" + readmeEnd
	got := s[i : j+len(readmeEnd)]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(readmePath, []byte(s[:i]+want+s[j+len(readmeEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the README's settings table differs from options.go; run: go test ./internal/config -run TestREADME -update\n--- README\n%s\n--- options.go\n%s", got, want)
}

// samples are values each list's entry parser accepts, for the tests that
// set every setting once.
var samples = map[string]string{
	"tokens":          "tok:acme:alice",
	"cors-origins":    "http://localhost:3000",
	"tool-confirm":    "http_get=always",
	"http-get-allow":  "10.0.0.0/8",
	"engine-fallback": "local",
	"file-types":      "image/png",
	"file-storage":    "disk",
	"s3-endpoint":     "http://127.0.0.1:9000",
}

func sample(t *testing.T, o option) string {
	t.Helper()
	if s, ok := samples[o.name]; ok {
		return s
	}
	switch {
	case o.typ == "string":
		return "sample-value-of-some-length"
	case o.typ == "int":
		return "7"
	case o.typ == "number":
		return "7.5"
	case o.typ == "duration":
		return "7s"
	case o.typ == "bool":
		return "true"
	case strings.Contains(o.typ, "|"):
		choices := strings.Split(o.typ, "|")
		return choices[len(choices)-1]
	}
	t.Fatalf("%s: no sample for type %q", o.name, o.typ)
	return ""
}

// fieldOf names the one Config field o sets.
func fieldOf(t *testing.T, o option) string {
	t.Helper()
	var c Config
	if err := o.set(&c, sample(t, o)); err != nil {
		t.Fatalf("%s: sample refused: %v", o.name, err)
	}
	v, typ := reflect.ValueOf(c), reflect.TypeOf(c)
	var set []string
	for i := range typ.NumField() {
		if !v.Field(i).IsZero() {
			set = append(set, typ.Field(i).Name)
		}
	}
	if len(set) != 1 {
		t.Fatalf("%s sets the fields %v, want exactly one", o.name, set)
	}
	return set[0]
}

// Every Config field has exactly one row, and every row is complete: a
// field added without its row (or a row parsing into another's field)
// fails here.
func TestOptionsTable(t *testing.T) {
	t.Parallel()
	flagName := regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	envName := regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	known := map[Group]bool{}
	for _, g := range groups {
		known[g] = true
	}
	names, envs, fields := map[string]bool{}, map[string]bool{}, map[string]string{}
	for _, o := range options {
		switch {
		case !flagName.MatchString(o.name), !envName.MatchString(o.env):
			t.Errorf("%s / %s: bad flag or variable name", o.name, o.env)
		case names[o.name], envs[o.env]:
			t.Errorf("%s / %s: named twice", o.name, o.env)
		case !known[o.group]:
			t.Errorf("%s: group %q is not in groups", o.name, o.group)
		case o.help == "", strings.Contains(o.help, "(default"):
			t.Errorf("%s: help %q must be given, without its default (the default column says it)", o.name, o.help)
		case o.set == nil:
			t.Errorf("%s: no parser", o.name)
		}
		names[o.name], envs[o.env] = true, true
		f := fieldOf(t, o)
		if other, ok := fields[f]; ok {
			t.Errorf("%s and %s both set Config.%s", other, o.name, f)
		}
		fields[f] = o.name
	}
	typ := reflect.TypeOf(Config{})
	for i := range typ.NumField() {
		if _, ok := fields[typ.Field(i).Name]; !ok {
			t.Errorf("Config.%s has no row in options", typ.Field(i).Name)
		}
	}
}

// The default column is what Load applies: parsing a row's default text
// gives the field Load leaves when nothing is set, and the defaults other
// packages own are theirs.
func TestDefaultsComeFromTheTable(t *testing.T) {
	t.Parallel()
	c, err := Load("serve", nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got := reflect.ValueOf(c)
	for _, o := range options {
		if o.fill == nil {
			continue
		}
		var want Config
		if err := o.set(&want, o.def); err != nil {
			t.Errorf("%s: the default %q does not parse: %v", o.name, o.def, err)
			continue
		}
		f := fieldOf(t, o)
		if g, w := got.FieldByName(f).Interface(), reflect.ValueOf(want).FieldByName(f).Interface(); !reflect.DeepEqual(g, w) {
			t.Errorf("%s: Load leaves %v, the table says %q (%v)", o.name, g, o.def, w)
		}
	}
	if c.RetrievalTopK != retrieval.DefaultTopK || c.KnowledgeMaxBytes != retrieval.DefaultMaxDocBytes ||
		c.CompactMinMessages != compaction.DefaultMinMessages || c.CompactKeepMessages != compaction.DefaultKeep ||
		c.ChainHardLimit != chain.DefaultHardLimit {
		t.Errorf("defaults owned by retrieval, compaction and chain differ: %+v", c)
	}
}

// A malformed entry of a list stops Load with an error naming the setting
// and the entry (a secret list names the entry by position, never by text).
func TestListEntriesAreChecked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		vars  map[string]string
		args  []string
		want  []string // in the error
		never string   // not in the error
	}{
		{vars: map[string]string{"AGENTCHAT_TOOL_CONFIRM": "http_get=always,send_webhook"}, want: []string{"AGENTCHAT_TOOL_CONFIRM", `"send_webhook"`}},
		{vars: map[string]string{"AGENTCHAT_TOOL_CONFIRM": "http_get=sometimes"}, want: []string{"AGENTCHAT_TOOL_CONFIRM", `"http_get=sometimes"`}},
		{vars: map[string]string{"AGENTCHAT_TOOL_CONFIRM": "bad name=never"}, want: []string{"AGENTCHAT_TOOL_CONFIRM", `"bad name=never"`}},
		{vars: map[string]string{"AGENTCHAT_TOOL_CONFIRM": "http_get=always,http_get=never"}, want: []string{"AGENTCHAT_TOOL_CONFIRM", `"http_get" is named twice`}},
		{args: []string{"--tool-confirm", "send_webhook:never"}, want: []string{"tool-confirm", `"send_webhook:never"`}},
		{vars: map[string]string{"AGENTCHAT_HTTP_GET_ALLOW": "wiki.internal,user@host"}, want: []string{"AGENTCHAT_HTTP_GET_ALLOW", `"user@host"`}},
		{vars: map[string]string{"AGENTCHAT_HTTP_GET_ALLOW": "10.0.0.0/33"}, want: []string{"AGENTCHAT_HTTP_GET_ALLOW", `"10.0.0.0/33"`}},
		{args: []string{"--http-get-allow", "a b"}, want: []string{"http-get-allow", `"a b"`}},
		{vars: map[string]string{"AGENTCHAT_CORS_ORIGINS": "http://a.example,localhost:3000"}, want: []string{"AGENTCHAT_CORS_ORIGINS", `"localhost:3000"`}},
		{vars: map[string]string{"AGENTCHAT_TOKENS": "tok:acme:alice,secret-only"}, want: []string{"AGENTCHAT_TOKENS", "entry 2"}, never: "secret-only"},
		{vars: map[string]string{"AGENTCHAT_TOKENS": "tok:acme:alice,hunter2:acme:root:owner"}, want: []string{"AGENTCHAT_TOKENS", "entry 2", `role "owner"`}, never: "hunter2"},
		{vars: map[string]string{"AGENTCHAT_TOKENS": "hunter2:acme:root:"}, want: []string{"AGENTCHAT_TOKENS", "entry 1"}, never: "hunter2"},
		{vars: map[string]string{"AGENTCHAT_TOKENS": "hunter2:acme:root:admin:x"}, want: []string{"AGENTCHAT_TOKENS", "entry 1"}, never: "hunter2"},
	}
	for _, tt := range tests {
		_, err := Load("serve", tt.args, env(tt.vars), io.Discard)
		if err == nil {
			t.Errorf("%v %v: loaded", tt.vars, tt.args)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v %v: error %q does not name %s", tt.vars, tt.args, err, w)
			}
		}
		if tt.never != "" && strings.Contains(err.Error(), tt.never) {
			t.Errorf("%v: error %q repeats a secret", tt.vars, err)
		}
	}
	c, err := Load("serve", nil, env(map[string]string{
		"AGENTCHAT_TOOL_CONFIRM":   " http_get = always , send_webhook=never,",
		"AGENTCHAT_HTTP_GET_ALLOW": "wiki.internal, 10.0.0.0/8 ,",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o := c.ToolOverrides(); len(o) != 2 || o["http_get"] != "always" || o["send_webhook"] != "never" {
		t.Errorf("tool overrides %v", o)
	}
	if strings.Join(c.HTTPGetAllow, "|") != "wiki.internal|10.0.0.0/8" {
		t.Errorf("http-get-allow %q", c.HTTPGetAllow)
	}
}

// --help lists every setting under its group, with its type, variable and
// default.
func TestUsage(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	_, err := Load("serve", []string{"--help"}, env(nil), &out)
	if err != flag.ErrHelp {
		t.Fatalf("err %v, want flag.ErrHelp", err)
	}
	help := out.String()
	at := 0
	for _, g := range groups {
		i := strings.Index(help, "\n"+string(g)+":\n")
		if i < at {
			t.Fatalf("group %s missing or out of order in:\n%s", g, help)
		}
		at = i
	}
	for _, o := range options {
		line := "  --" + o.name + " " + o.typ + "  [" + o.env
		if !strings.Contains(help, line) {
			t.Errorf("help lacks %q", line)
		}
		if o.def != "" && !strings.Contains(help, "(default "+o.def+")") {
			t.Errorf("help lacks %s's default %q", o.name, o.def)
		}
	}
	for _, want := range []string{"  --retrieval-top-k int  [AGENTCHAT_RETRIEVAL_TOP_K]\n        most retrieval hits per turn and source (default 4)\n",
		"  --tokens list  [AGENTCHAT_TOKENS (or _FILE)]\n", "  --retrieval on|off  [AGENTCHAT_RETRIEVAL]\n"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

func TestFlagErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--no-such-flag"}, {"--addr"}, {"--ping-interval", "fast"}, {"serve-me"}} {
		_, err := Load("serve", args, env(nil), io.Discard)
		var fe *FlagError
		if !errorsAs(err, &fe) {
			t.Errorf("%v: error %v, want a *FlagError", args, err)
		}
	}
}

func errorsAs(err error, target **FlagError) bool {
	fe, ok := err.(*FlagError)
	*target = fe
	return ok
}
