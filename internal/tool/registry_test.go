package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Checked once after all (parallel) tests: a tool abandoned at its
	// deadline must still be able to finish and exit.
	goleak.VerifyTestMain(m)
}

// fakeTool is a Tool whose behaviour is a function.
type fakeTool struct {
	spec Spec
	call func(ctx context.Context, args json.RawMessage) (Result, error)
}

func (f fakeTool) Spec() Spec { return f.spec }
func (f fakeTool) Call(ctx context.Context, args json.RawMessage) (Result, error) {
	return f.call(ctx, args)
}

const fetchSchema = `{
	"type": "object",
	"properties": {
		"url": {"type": "string"},
		"count": {"type": "integer", "minimum": 1},
		"items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}
	},
	"required": ["url"],
	"additionalProperties": false
}`

// echoTool returns its arguments as Output.
func echoTool(name string, confirm Confirm) fakeTool {
	return fakeTool{
		spec: Spec{Name: name, Description: "echo", Parameters: json.RawMessage(fetchSchema), Confirm: confirm, Source: "builtin"},
		call: func(_ context.Context, args json.RawMessage) (Result, error) {
			return Result{Output: args, Content: "ok"}, nil
		},
	}
}

func setup(t *testing.T, cfg RegistryConfig, tools ...Tool) *Registry {
	t.Helper()
	r, err := NewRegistry(cfg)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	for _, tl := range tools {
		if err := r.Register(tl); err != nil {
			t.Fatalf("Register(%s): %v", tl.Spec().Name, err)
		}
	}
	return r
}

func TestRegistryConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     RegistryConfig
		wantErr string
	}{
		{"zero is fine", RegistryConfig{}, ""},
		{"bad override", RegistryConfig{Overrides: map[string]Confirm{"x": "sometimes"}}, `Overrides["x"]`},
		{"negative timeout", RegistryConfig{DefaultTimeout: -time.Second}, "DefaultTimeout"},
		{"negative cap", RegistryConfig{MaxOutputBytes: -1}, "MaxOutputBytes"},
		{"cap too small for the marker", RegistryConfig{MaxOutputBytes: 10}, "MaxOutputBytes is 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewRegistry(tt.cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to name %s", err, tt.wantErr)
			}
		})
	}
}

func TestRegister(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		spec    Spec
		wantErr string
	}{
		{"ok", Spec{Name: "ok_tool-1", Confirm: ConfirmNever}, ""},
		{"empty name", Spec{Confirm: ConfirmNever}, "name must match"},
		{"dot in name", Spec{Name: "srv.tool", Confirm: ConfirmNever}, "name must match"},
		{"too long", Spec{Name: strings.Repeat("a", 65), Confirm: ConfirmNever}, "name must match"},
		{"bad confirm", Spec{Name: "x", Confirm: "maybe"}, "confirm"},
		{"schema not JSON", Spec{Name: "x", Parameters: json.RawMessage(`{`)}, "not valid JSON"},
		{"schema invalid", Spec{Name: "x", Parameters: json.RawMessage(`{"type": 5}`)}, "parameters schema"},
		{"external ref", Spec{Name: "x", Parameters: json.RawMessage(`{"$ref": "file:///etc/passwd"}`)}, "not allowed"},
		{"draft-04 schema", Spec{Name: "x", Parameters: json.RawMessage(`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"n":{"type":"number","minimum":0,"exclusiveMinimum":true}}}`)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := setup(t, RegistryConfig{})
			err := r.Register(fakeTool{spec: tt.spec})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Register: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Register err = %v, want containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRegisterDuplicate(t *testing.T) {
	t.Parallel()
	r := setup(t, RegistryConfig{}, echoTool("echo", ConfirmNever))
	err := r.Register(echoTool("echo", ConfirmAlways))
	if !errors.Is(err, ErrDuplicate) {
		t.Fatalf("err = %v, want ErrDuplicate", err)
	}
}

func TestListAndOverrides(t *testing.T) {
	t.Parallel()
	r := setup(t, RegistryConfig{Overrides: map[string]Confirm{
		"zeta":  ConfirmNever,  // loosen
		"alpha": ConfirmAlways, // tighten
		"later": ConfirmNever,  // registered after the registry was made
	}},
		echoTool("zeta", ConfirmAlways),
		echoTool("alpha", ConfirmNever),
		echoTool("mid", ConfirmNever),
		fakeTool{spec: Spec{Name: "unsure"}}, // no Confirm: treated as writing
	)
	if err := r.Register(echoTool("later", ConfirmAlways)); err != nil {
		t.Fatal(err)
	}

	var got []string
	for _, s := range r.List() {
		got = append(got, s.Name+"="+string(s.Confirm))
	}
	want := "alpha=always later=never mid=never unsure=always zeta=never"
	if strings.Join(got, " ") != want {
		t.Fatalf("List = %v, want %s", got, want)
	}

	s, ok := r.Get("zeta")
	if !ok || s.Confirm != ConfirmNever {
		t.Fatalf("Get(zeta) = %+v, %v; want override never", s, ok)
	}
	s, _ = r.Get("unsure")
	if string(s.Parameters) != string(emptyObjectSchema) {
		t.Fatalf("empty Parameters = %s, want %s", s.Parameters, emptyObjectSchema)
	}
	if _, ok := r.Get("nope"); ok {
		t.Fatal("Get(nope) found a tool")
	}
}

func TestCallValidatesArguments(t *testing.T) {
	t.Parallel()
	r := setup(t, RegistryConfig{}, echoTool("fetch", ConfirmNever))
	tests := []struct {
		name string
		args string
		want []string // substrings of Error; nil means success
	}{
		{"valid", `{"url":"https://example.com","count":2}`, nil},
		{"missing required", `{}`, []string{"invalid arguments:", "missing property 'url'"}},
		{"wrong type", `{"url":"x","count":"three"}`, []string{"invalid arguments:", "count:", "want integer"}},
		{"below minimum", `{"url":"x","count":0}`, []string{"count:", "minimum"}},
		{"unknown field", `{"url":"x","color":"red"}`, []string{"'color' not allowed"}},
		{"nested array item", `{"url":"x","items":[{"name":"a"},{}]}`, []string{"items/1:", "missing property 'name'"}},
		{"not an object", `[1,2]`, []string{"want object"}},
		{"not JSON", `{"url":`, []string{"invalid arguments:", "not valid JSON"}},
		{"null means no arguments", `null`, []string{"missing property 'url'"}},
		{"several problems", `{"url":1,"count":"x"}`, []string{"url:", "count:", ";"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := r.Call(t.Context(), "fetch", json.RawMessage(tt.args))
			if tt.want == nil {
				if res.Status != StatusSuccess {
					t.Fatalf("Call = %+v, want success", res)
				}
				return
			}
			if res.Status != StatusFailure {
				t.Fatalf("Status = %s, want failure (%+v)", res.Status, res)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Error, w) {
					t.Errorf("Error = %q, want it to contain %q", res.Error, w)
				}
			}
			if res.Content != res.Error {
				t.Errorf("Content = %q, want the error repeated", res.Content)
			}
		})
	}
}

func TestCallEmptyArgumentsBecomeObject(t *testing.T) {
	t.Parallel()
	var got json.RawMessage
	r := setup(t, RegistryConfig{}, fakeTool{
		spec: Spec{Name: "noargs", Confirm: ConfirmNever},
		call: func(_ context.Context, args json.RawMessage) (Result, error) {
			got = args
			return Result{Content: "ok"}, nil
		},
	})
	for _, args := range []string{"", "null", "  "} {
		res := r.Call(t.Context(), "noargs", json.RawMessage(args))
		if res.Status != StatusSuccess || string(got) != "{}" {
			t.Fatalf("args %q: result %+v, tool saw %s; want success with {}", args, res, got)
		}
	}
}

// TestCallTimeout runs in a synctest bubble: the clock is virtual, so the
// default 30s timeout is exercised as is, instantly and deterministically.
func TestCallTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var late atomic.Bool
		r := setup(t, RegistryConfig{},
			fakeTool{
				spec: Spec{Name: "hang", Confirm: ConfirmNever}, // registry default: 30s
				call: func(ctx context.Context, _ json.RawMessage) (Result, error) {
					<-ctx.Done()
					return Result{}, ctx.Err()
				},
			},
			fakeTool{
				// Ignores its context entirely: the registry must still return.
				spec: Spec{Name: "stubborn", Confirm: ConfirmNever, Timeout: 5 * time.Second},
				call: func(context.Context, json.RawMessage) (Result, error) {
					<-release
					late.Store(true)
					return Result{Content: "too late"}, nil
				},
			},
		)

		start := time.Now()
		res := r.Call(t.Context(), "hang", nil)
		if res.Status != StatusFailure || res.Error != "tool hang timed out after 30s" {
			t.Fatalf("hang: %+v", res)
		}
		if d := time.Since(start); d != DefaultTimeout {
			t.Fatalf("hang returned after %s, want %s", d, DefaultTimeout)
		}

		res = r.Call(t.Context(), "stubborn", nil)
		if res.Status != StatusFailure || res.Error != "tool stubborn timed out after 5s" {
			t.Fatalf("stubborn: %+v", res)
		}
		// The abandoned call may still finish; its result goes nowhere and
		// its goroutine exits (the bubble would fail if it stayed blocked).
		close(release)
		synctest.Wait()
		if !late.Load() {
			t.Fatal("the abandoned tool did not get to finish")
		}
	})
}

func TestCallOutcomes(t *testing.T) {
	t.Parallel()
	var logBuf syncBuffer
	logger := slog.New(slog.NewTextHandler(&logBuf, nil))

	tools := []Tool{
		fakeTool{
			spec: Spec{Name: "hang", Confirm: ConfirmNever},
			call: func(ctx context.Context, _ json.RawMessage) (Result, error) {
				<-ctx.Done()
				return Result{}, ctx.Err()
			},
		},
		fakeTool{
			spec: Spec{Name: "boom", Confirm: ConfirmNever},
			call: func(context.Context, json.RawMessage) (Result, error) {
				var m map[string]int
				m["x"] = 1 // nil map write: a real runtime panic
				return Result{}, nil
			},
		},
		fakeTool{
			spec: Spec{Name: "fails", Confirm: ConfirmNever},
			call: func(context.Context, json.RawMessage) (Result, error) {
				return Result{}, errors.New("upstream said no")
			},
		},
		fakeTool{
			spec: Spec{Name: "soft_fail", Confirm: ConfirmNever},
			call: func(context.Context, json.RawMessage) (Result, error) {
				return Result{Status: StatusFailure, Content: "not found"}, nil
			},
		},
	}
	r := setup(t, RegistryConfig{Logger: logger}, tools...)

	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name      string
		tool      string
		ctx       context.Context
		wantError string
	}{
		{"cancelled by caller", "hang", cancelled, "tool hang was cancelled"},
		{"panic", "boom", t.Context(), "tool boom crashed (internal error); the call did not complete"},
		{"error", "fails", t.Context(), "upstream said no"},
		{"failure without error", "soft_fail", t.Context(), "not found"},
		{"unknown tool", "nope", t.Context(), `unknown tool "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := r.Call(tt.ctx, tt.tool, nil)
			if res.Status != StatusFailure || res.Error != tt.wantError {
				t.Fatalf("Call = %+v, want failure %q", res, tt.wantError)
			}
			if res.Content != tt.wantError {
				t.Fatalf("Content = %q, want the error repeated", res.Content)
			}
		})
	}

	t.Run("panic is logged, not shown", func(t *testing.T) {
		t.Parallel()
		res := r.Call(t.Context(), "boom", nil)
		if strings.Contains(res.Error, "nil map") {
			t.Fatalf("panic value leaked to the model: %q", res.Error)
		}
		if log := logBuf.String(); !strings.Contains(log, "tool panicked") || !strings.Contains(log, "nil map") {
			t.Fatalf("log = %q, want the panic with its value", log)
		}
	})
}

func TestCallCapsOutput(t *testing.T) {
	t.Parallel()
	const limit = 200
	big := strings.Repeat("é", 300) // 600 bytes of two-byte runes: the cut must not split one
	bigJSON, _ := json.Marshal(map[string]string{"body": big})

	tests := []struct {
		name       string
		res        Result
		wantStatus Status
		check      func(t *testing.T, res Result)
	}{
		{"small passes", Result{Content: "hi", Output: json.RawMessage(`{"a":1}`)}, StatusSuccess, nil},
		{"long content", Result{Content: big}, StatusPartial, func(t *testing.T, res Result) {
			if len(res.Content) > limit || !utf8.ValidString(res.Content) {
				t.Fatalf("Content is %d bytes (valid UTF-8: %v), want <= %d", len(res.Content), utf8.ValidString(res.Content), limit)
			}
			if !strings.Contains(res.Content, "[truncated:") || !strings.Contains(res.Content, "of 600 bytes shown]") {
				t.Fatalf("Content = %q, want a truncation marker", res.Content)
			}
		}},
		{"long output", Result{Content: "ok", Output: bigJSON}, StatusPartial, func(t *testing.T, res Result) {
			var m struct {
				Truncated  bool   `json:"truncated"`
				TotalBytes int    `json:"totalBytes"`
				Preview    string `json:"preview"`
			}
			if err := json.Unmarshal(res.Output, &m); err != nil {
				t.Fatalf("Output is not JSON: %v", err)
			}
			if !m.Truncated || m.TotalBytes != len(bigJSON) || m.Preview == "" || len(res.Output) > limit {
				t.Fatalf("Output = %s (%d bytes)", res.Output, len(res.Output))
			}
		}},
		{"long error stays a failure", Result{Status: StatusFailure, Error: big}, StatusFailure, func(t *testing.T, res Result) {
			if len(res.Error) > limit {
				t.Fatalf("Error is %d bytes", len(res.Error))
			}
		}},
		{"invalid output JSON is kept as a string", Result{Output: json.RawMessage(`{oops`)}, StatusSuccess, func(t *testing.T, res Result) {
			if string(res.Output) != `"{oops"` {
				t.Fatalf("Output = %s", res.Output)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := setup(t, RegistryConfig{MaxOutputBytes: limit}, fakeTool{
				spec: Spec{Name: "out", Confirm: ConfirmNever},
				call: func(context.Context, json.RawMessage) (Result, error) { return tt.res, nil },
			})
			res := r.Call(t.Context(), "out", nil)
			if res.Status != tt.wantStatus {
				t.Fatalf("Status = %s, want %s (%+v)", res.Status, tt.wantStatus, res)
			}
			if tt.check != nil {
				tt.check(t, res)
			}
		})
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	r := setup(t, RegistryConfig{})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			name := fmt.Sprintf("echo_%d", i)
			if err := r.Register(echoTool(name, ConfirmNever)); err != nil {
				t.Error(err)
			}
			res := r.Call(t.Context(), name, json.RawMessage(`{"url":"u"}`))
			if res.Status != StatusSuccess {
				t.Errorf("Call(%s) = %+v", name, res)
			}
			_ = r.List()
			r.SetServerStatus(ServerStatus{Name: name, State: ServerConnected})
		})
	}
	wg.Wait()
	if n := len(r.List()); n != 20 {
		t.Fatalf("List has %d tools, want 20", n)
	}
	if s := r.Servers(); len(s) != 20 || s[0].Name != "echo_0" {
		t.Fatalf("Servers = %v", s)
	}
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
