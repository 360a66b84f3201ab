package agent

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/dialect"
)

var catalog = Catalog{
	Model: func(name string) bool { return name == "default" || name == "fast" },
	Tool: func(name string) (bool, bool) {
		switch name {
		case "calculator", "http_get":
			return true, false
		case "send_webhook":
			return true, true
		}
		return false, false
	},
	Engine: func(name string) bool { return name == "local" || name == "chain" || name == "acme-claw" },
}

func decodeValid(body string) (Spec, error) {
	sp, off, err := DecodeSpec([]byte(body))
	if err != nil {
		return Spec{}, err
	}
	sp.Normalize()
	return sp, sp.Validate(catalog, off)
}

// Every field is checked against what the server has, and the error names
// the field (and the entry of a list).
func TestValidateNamesTheField(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", MaxInstructionsChars+1)
	tests := []struct {
		body, field string
	}{
		{`{"name":"  "}`, "name"},
		{`{"name":"` + strings.Repeat("n", MaxNameChars+1) + `"}`, "name"},
		{`{"name":"a","model":"gpt-9"}`, "model"},
		{`{"name":"a","instructions":"` + long + `"}`, "instructions"},
		{`{"name":"a","tools":["calculator","rm_rf"]}`, "tools[1]"},
		{`{"name":"a","tools":["calculator","calculator"]}`, "tools[1]"},
		{`{"name":"a","confirm":["nope"]}`, "confirm[0]"},
		{`{"name":"a","confirm":{"send_webhook":false}}`, "confirm.send_webhook"},
		{`{"name":"a","confirm":{"nope":false}}`, "confirm.nope"},
		{`{"name":"a","confirm":"http_get"}`, "confirm"},
		{`{"name":"a","knowledge":["ok","bad name"]}`, "knowledge[1]"},
		{`{"name":"a","engine":"openclaw-elsewhere"}`, "engine"},
		{`{"name":"a","maxIterations":51}`, "maxIterations"},
		{`{"name":"a","maxIterations":-1}`, "maxIterations"},
		{`{"name":"a","multitaskStrategy":"later"}`, "multitaskStrategy"},
		{`{"name":"a","temperature":2.5}`, "temperature"},
		{`{"name":"a","starters":["","x"]}`, "starters[0]"},
		{`{"name":"a","starters":["1","2","3","4","5","6","7","8","9"]}`, "starters"},
		{`{"name":"a","metadata":[1]}`, "metadata"},
	}
	for _, tt := range tests {
		_, err := decodeValid(tt.body)
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != tt.field {
			t.Errorf("%.80s: error %v, want one naming %q", tt.body, err, tt.field)
		}
	}
	// Not a definition at all: the decoder's 400s.
	for _, body := range []string{`{"name":"a","tool":["x"]}`, `{"name":1}`, `[]`, `{"name":"a\u0000"}`} {
		_, err := decodeValid(body)
		var re *dialect.RequestError
		if !errors.As(err, &re) || re.Status != 400 {
			t.Errorf("%s: error %v, want a 400", body, err)
		}
	}
}

// A definition reads as it is stored: defaults spelt out, lists kept apart
// from their absence (nil is the server's default set, [] none).
func TestSpecDefaultsAndForms(t *testing.T) {
	t.Parallel()
	sp, err := decodeValid(`{"name":" Sales ","tools":[],"confirm":{"http_get":true,"calculator":false,"send_webhook":true},"temperature":0}`)
	if err != nil {
		t.Fatal(err)
	}
	if sp.Name != "Sales" || sp.Model != DefaultModel || sp.Tools == nil || len(*sp.Tools) != 0 || sp.Knowledge != nil ||
		!slices.Equal(sp.Confirm, []string{"http_get", "send_webhook"}) || sp.Temperature == nil || *sp.Temperature != 0 {
		t.Fatalf("spec %+v", sp)
	}
	if got := string(sp.Marshal()); got != `{"name":"Sales","model":"default","tools":[],"confirm":["http_get","send_webhook"],"temperature":0}` {
		t.Fatalf("stored as %s", got)
	}
	back, err := ParseSpec(sp.Marshal())
	if err != nil || len(Changes(sp, back)) != 0 {
		t.Fatalf("round trip %+v (%v), changes %v", back, err, Changes(sp, back))
	}
}

// A PATCH is a JSON merge patch of the latest definition: named fields
// replace, null restores the default, metadata merges key by key; the
// changes list names what differs.
func TestPatch(t *testing.T) {
	t.Parallel()
	base, err := decodeValid(`{"name":"Support","instructions":"Be kind.","tools":["calculator"],"knowledge":["faq"],"metadata":{"team":"a","tier":1}}`)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		patch   string
		check   func(Spec) bool
		changes []string
	}{
		{`{"instructions":"Be brief."}`, func(s Spec) bool { return s.Instructions == "Be brief." && s.Name == "Support" }, []string{"instructions"}},
		{`{"tools":null,"knowledge":[]}`, func(s Spec) bool { return s.Tools == nil && s.Knowledge != nil && len(*s.Knowledge) == 0 }, []string{"tools", "knowledge"}},
		{`{"metadata":{"tier":null,"owner":"ops"}}`, func(s Spec) bool { return string(s.Metadata) == `{"owner":"ops","team":"a"}` }, []string{"metadata"}},
		{`{"model":"fast","temperature":0.2}`, func(s Spec) bool { return s.Model == "fast" && *s.Temperature == 0.2 }, []string{"model", "temperature"}},
		{`{"instructions":"Be kind."}`, func(s Spec) bool { return true }, nil},
	}
	for _, tt := range tests {
		sp, off, err := Patch(base, []byte(tt.patch))
		if err == nil {
			sp.Normalize()
			err = sp.Validate(catalog, off)
		}
		if err != nil {
			t.Errorf("%s: %v", tt.patch, err)
			continue
		}
		if !tt.check(sp) {
			t.Errorf("%s: patched to %s", tt.patch, sp.Marshal())
		}
		if got := Changes(base, sp); !slices.Equal(got, tt.changes) {
			t.Errorf("%s: changes %v, want %v", tt.patch, got, tt.changes)
		}
	}
	if _, _, err := Patch(base, []byte(`{"nmae":"x"}`)); err == nil {
		t.Error("a patch with an unknown field applied")
	}
	if _, _, err := Patch(base, []byte(`{"name":5}`)); err == nil {
		t.Error("a patch of the wrong type applied")
	}
}
