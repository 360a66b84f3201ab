package builtin

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentchat/agentchat/internal/tool"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fixedNow is the clock of every test: 2025-03-04T05:06:07Z.
var fixedNow = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// setup returns a registry holding the built-ins configured by cfg, with a
// fixed clock unless cfg sets one. Calls go through the registry, as in
// production, so the schemas are exercised too.
func setup(t *testing.T, cfg Config) *tool.Registry {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return fixedNow }
	}
	r, err := tool.NewRegistry(tool.RegistryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := Register(r, cfg); err != nil {
		t.Fatalf("Register: %v", err)
	}
	return r
}

// call runs a tool with args given as a Go value.
func call(t *testing.T, r *tool.Registry, name string, args any) tool.Result {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return r.Call(t.Context(), name, b)
}

func TestSpecs(t *testing.T) {
	t.Parallel()
	r := setup(t, Config{})
	want := map[string]tool.Confirm{
		"calculator":          tool.ConfirmNever,
		"get_current_time":    tool.ConfirmNever,
		"http_get":            tool.ConfirmNever,
		"send_feishu_message": tool.ConfirmAlways,
		"send_webhook":        tool.ConfirmAlways,
		"make_chart":          tool.ConfirmNever,
	}
	specs := r.List()
	if len(specs) != len(want) {
		t.Fatalf("List has %d tools, want %d", len(specs), len(want))
	}
	for _, s := range specs {
		if s.Confirm != want[s.Name] {
			t.Errorf("%s: Confirm = %s, want %s", s.Name, s.Confirm, want[s.Name])
		}
		if s.Source != "builtin" || s.Description == "" {
			t.Errorf("%s: Source %q, Description %q", s.Name, s.Source, s.Description)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"zero", Config{}, ""},
		{"allow list", Config{HTTPGet: HTTPGetConfig{Allow: []string{"127.0.0.1", "10.0.0.0/8", "wiki.internal", "[::1]"}}}, ""},
		{"bad cidr", Config{HTTPGet: HTTPGetConfig{Allow: []string{"10.0.0.0/99"}}}, `HTTPGet.Allow entry "10.0.0.0/99"`},
		{"url in allow", Config{HTTPGet: HTTPGetConfig{Allow: []string{"http://x"}}}, "HTTPGet.Allow"},
		{"negative size", Config{HTTPGet: HTTPGetConfig{MaxBytes: -1}}, "HTTPGet.MaxBytes"},
		{"feishu not http", Config{Feishu: FeishuConfig{WebhookURL: "ftp://secret-token@x"}}, "Feishu.WebhookURL"},
		{"webhook no host", Config{Webhook: WebhookConfig{URL: "https://"}}, "Webhook.URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tt.cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New err = %v, want one naming %s", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "secret-token") {
				t.Fatalf("error echoes the webhook URL: %v", err)
			}
		})
	}
}

func TestCurrentTime(t *testing.T) {
	t.Parallel()
	r := setup(t, Config{})
	tests := []struct {
		name      string
		args      any
		wantTime  string
		wantZone  string
		wantError string
	}{
		{"default UTC", map[string]any{}, "2025-03-04T05:06:07Z", "UTC", ""},
		{"Shanghai", map[string]any{"timezone": "Asia/Shanghai"}, "2025-03-04T13:06:07+08:00", "Asia/Shanghai", ""},
		{"New York in winter", map[string]any{"timezone": "America/New_York"}, "2025-03-04T00:06:07-05:00", "America/New_York", ""},
		{"unknown zone", map[string]any{"timezone": "Mars/Olympus_Mons"}, "", "", `unknown time zone "Mars/Olympus_Mons"`},
		{"server local zone refused", map[string]any{"timezone": "Local"}, "", "", "unknown time zone"},
		{"path in zone", map[string]any{"timezone": "../../etc/passwd"}, "", "", "unknown time zone"},
		{"wrong type", map[string]any{"timezone": 8}, "", "", "invalid arguments: timezone: got number, want string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := call(t, r, "get_current_time", tt.args)
			if tt.wantError != "" {
				if res.Status != tool.StatusFailure || !strings.Contains(res.Error, tt.wantError) {
					t.Fatalf("result %+v, want failure %q", res, tt.wantError)
				}
				return
			}
			var out struct {
				Time     string `json:"time"`
				Timezone string `json:"timezone"`
				Unix     int64  `json:"unix"`
			}
			if err := json.Unmarshal(res.Output, &out); err != nil || res.Status != tool.StatusSuccess {
				t.Fatalf("result %+v (%v)", res, err)
			}
			if out.Time != tt.wantTime || out.Timezone != tt.wantZone || out.Unix != fixedNow.Unix() {
				t.Fatalf("output %+v, want %s %s %d", out, tt.wantTime, tt.wantZone, fixedNow.Unix())
			}
			if !strings.Contains(res.Content, tt.wantTime) {
				t.Fatalf("Content %q does not show the time", res.Content)
			}
		})
	}
}

func TestMakeChart(t *testing.T) {
	t.Parallel()
	r := setup(t, Config{})
	res := call(t, r, "make_chart", map[string]any{"title": "Sales", "values": "3, 5.5 -8", "labels": "Mon,Tue"})
	if res.Status != tool.StatusSuccess || string(res.Output) != `{"chart_data":{"type":"line","title":"Sales","labels":["Mon","Tue","3"],"datasets":[{"label":"Sales","data":[3,5.5,-8]}]}}` {
		t.Fatalf("result %+v %s", res, res.Output)
	}
	if res := call(t, r, "make_chart", map[string]any{"values": "3, x"}); res.Status != tool.StatusFailure {
		t.Fatalf("bad number: %+v", res)
	}
}
