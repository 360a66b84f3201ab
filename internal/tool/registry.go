package tool

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Registry defaults.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultMaxOutputBytes = 64 << 10
)

// minOutputBytes is the smallest output cap that leaves room for the
// truncation marker and some output.
const minOutputBytes = 128

// namePattern is what OpenAI-compatible APIs accept as a function name
// (Anthropic's rule is the same). A tool the model cannot name is useless,
// so Register refuses other names rather than letting a provider reject the
// whole request later.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ValidName reports whether name is a name Register accepts (and a model
// can call), so settings that name tools can be checked before any tool
// registers.
func ValidName(name string) bool { return namePattern.MatchString(name) }

// RegistryConfig configures a Registry. Zero values mean the defaults.
type RegistryConfig struct {
	// DefaultTimeout bounds a call whose Spec.Timeout is zero. Default 30s.
	DefaultTimeout time.Duration
	// MaxOutputBytes caps Result.Content, Result.Output and Result.Error, each
	// on its own. A result over the cap is truncated, marked, and reported
	// as partial. Default 64 KiB.
	MaxOutputBytes int
	// Overrides replaces the confirmation policy of tools by name: the
	// operator's word beats what a tool (or an MCP server's annotations)
	// claims. Values must be ConfirmAlways or ConfirmNever. Names not (yet)
	// registered are kept, so an override may name an MCP tool that
	// registers later.
	Overrides map[string]Confirm
	// Logger receives tool panics with their stacks. Nil discards.
	Logger *slog.Logger
	// Observer, when set, watches every call (metrics and traces).
	Observer CallObserver
}

// CallObserver watches tool calls. ToolCall is called as a call begins and
// returns the context the call runs in (carrying its span) and a function
// the registry calls with the call's status when it ends.
type CallObserver interface {
	ToolCall(ctx context.Context, name string) (context.Context, func(status string))
}

// Validate reports the first bad field.
func (c RegistryConfig) Validate() error {
	if c.DefaultTimeout < 0 {
		return fmt.Errorf("tool registry: DefaultTimeout is negative (%s)", c.DefaultTimeout)
	}
	if c.MaxOutputBytes < 0 || (c.MaxOutputBytes > 0 && c.MaxOutputBytes < minOutputBytes) {
		// Below this the truncation marker alone would not fit.
		return fmt.Errorf("tool registry: MaxOutputBytes is %d, want 0 (default) or at least %d", c.MaxOutputBytes, minOutputBytes)
	}
	for name, v := range c.Overrides {
		if v != ConfirmAlways && v != ConfirmNever {
			return fmt.Errorf("tool registry: Overrides[%q] is %q, want %q or %q", name, v, ConfirmAlways, ConfirmNever)
		}
	}
	return nil
}

// Registry holds the tools the agent may call and is the only way calls run:
// it validates arguments, bounds time and output size, and turns every
// failure (including a panic) into a Result for the model. It is safe for
// concurrent use.
//
// It also records the health of tool servers (MCP), which package mcptool
// reports, so one object answers "what tools are there and are they well".
type Registry struct {
	defaultTimeout time.Duration
	maxOutput      int
	overrides      map[string]Confirm
	log            *slog.Logger
	observer       CallObserver

	mu      sync.RWMutex
	entries map[string]*entry
	servers map[string]ServerStatus
}

type entry struct {
	tool   Tool
	spec   Spec // as the tool declared it, defaults filled in
	schema *jsonschema.Schema
}

// NewRegistry returns an empty registry, or an error naming the bad field
// of cfg.
func NewRegistry(cfg RegistryConfig) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Registry{
		defaultTimeout: cmp.Or(cfg.DefaultTimeout, DefaultTimeout),
		maxOutput:      cmp.Or(cfg.MaxOutputBytes, DefaultMaxOutputBytes),
		overrides:      maps.Clone(cfg.Overrides),
		log:            log,
		observer:       cfg.Observer,
		entries:        make(map[string]*entry),
		servers:        make(map[string]ServerStatus),
	}, nil
}

// Register adds t. It fails if the name is taken or not a valid function
// name, if Confirm is neither always nor never, or if Parameters is not a
// JSON Schema the validator can compile (external $refs are refused). An
// empty Confirm means ConfirmAlways: a tool that does not say it is
// harmless is treated as one that writes. Empty Parameters means an object
// with no declared properties.
func (r *Registry) Register(t Tool) error {
	spec := t.Spec()
	if !namePattern.MatchString(spec.Name) {
		return fmt.Errorf("register tool %q: name must match %s", spec.Name, namePattern)
	}
	switch spec.Confirm {
	case "":
		spec.Confirm = ConfirmAlways
	case ConfirmAlways, ConfirmNever:
	default:
		return fmt.Errorf("register tool %q: confirm is %q, want %q or %q", spec.Name, spec.Confirm, ConfirmAlways, ConfirmNever)
	}
	if spec.Timeout < 0 {
		return fmt.Errorf("register tool %q: negative timeout %s", spec.Name, spec.Timeout)
	}
	if len(spec.Parameters) == 0 {
		spec.Parameters = emptyObjectSchema
	}
	spec.Parameters = slices.Clone(spec.Parameters)
	schema, err := compileSchema(spec.Parameters)
	if err != nil {
		return fmt.Errorf("register tool %q: %w", spec.Name, err)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.entries[spec.Name]; dup {
		return fmt.Errorf("register tool %q: %w", spec.Name, ErrDuplicate)
	}
	r.entries[spec.Name] = &entry{tool: t, spec: spec, schema: schema}
	return nil
}

// ErrDuplicate is returned (wrapped) by Register when the name is taken.
var ErrDuplicate = errors.New("a tool with this name is already registered")

// Get returns the effective Spec of the named tool: the policy override, if
// any, already applied to Confirm. This is the Spec the run service consults
// before a call to decide whether a person must approve it. Parameters is
// shared with the registry: read it, do not modify it.
func (r *Registry) Get(name string) (Spec, bool) {
	r.mu.RLock()
	e, ok := r.entries[name]
	r.mu.RUnlock()
	if !ok {
		return Spec{}, false
	}
	return r.effective(e.spec), true
}

// List returns the effective Specs of all tools, sorted by name so the
// model sees a stable tool list (and prompt caches stay warm). As with Get,
// Parameters must not be modified.
func (r *Registry) List() []Spec {
	r.mu.RLock()
	specs := make([]Spec, 0, len(r.entries))
	for _, e := range r.entries {
		specs = append(specs, r.effective(e.spec))
	}
	r.mu.RUnlock()
	slices.SortFunc(specs, func(a, b Spec) int { return strings.Compare(a.Name, b.Name) })
	return specs
}

func (r *Registry) effective(s Spec) Spec {
	if c, ok := r.overrides[s.Name]; ok {
		s.Confirm = c
	}
	return s
}

// Call runs the named tool and always returns a Result, never an error: what
// goes wrong is something the model should read and react to.
//
//   - An unknown tool or arguments that do not match the schema fail without
//     running the tool; the message names the field and the problem.
//   - The call is bounded by Spec.Timeout (else the registry default). A tool
//     that ignores its context is abandoned: Call returns at the deadline and
//     the tool's late result is discarded.
//   - A panic in the tool becomes a failure; the panic value and stack go to
//     the log, not to the model.
//   - Content, Output and Error are each capped at MaxOutputBytes; a capped
//     result is marked and, if it was a success, becomes partial.
//   - A failure always carries Error, and Content repeats it when the tool
//     left Content empty, so a caller showing only Content still says why.
//
// Call does not ask for confirmation: the run service checks Get(name).Confirm
// and obtains approval before it calls.
func (r *Registry) Call(ctx context.Context, name string, args json.RawMessage) Result {
	if r.observer != nil {
		// A name the model made up is not a label: series stay bounded.
		label := name
		if _, ok := r.Get(name); !ok {
			label = "unknown"
		}
		var done func(string)
		ctx, done = r.observer.ToolCall(ctx, label)
		res := r.call(ctx, name, args)
		done(string(res.Status))
		return res
	}
	return r.call(ctx, name, args)
}

func (r *Registry) call(ctx context.Context, name string, args json.RawMessage) Result {
	r.mu.RLock()
	e, ok := r.entries[name]
	r.mu.RUnlock()
	if !ok {
		return r.finish(Result{Status: StatusFailure, Error: fmt.Sprintf("unknown tool %q", name)})
	}
	args, err := checkArgs(e.schema, args)
	if err != nil {
		return r.finish(Result{Status: StatusFailure, Error: "invalid arguments: " + err.Error()})
	}
	timeout := cmp.Or(e.spec.Timeout, r.defaultTimeout)
	return r.finish(r.run(ctx, e, args, timeout))
}

// Validate checks args against the named tool's schema without calling it,
// so a call that needs a person's approval is checked before anyone is asked.
// The error text is written for the model.
func (r *Registry) Validate(name string, args json.RawMessage) error {
	r.mu.RLock()
	e, ok := r.entries[name]
	r.mu.RUnlock()
	if !ok {
		return fmt.Errorf("unknown tool %q", name)
	}
	if _, err := checkArgs(e.schema, args); err != nil {
		return fmt.Errorf("invalid arguments: %w", err)
	}
	return nil
}

// errTimeout is the cause of a context that hit the per-call deadline, so a
// timeout can be told apart from the caller cancelling.
var errTimeout = errors.New("tool call timed out")

type outcome struct {
	res      Result
	err      error
	panicked bool
}

func (r *Registry) run(ctx context.Context, e *entry, args json.RawMessage, timeout time.Duration) Result {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer cancel()

	// Buffered so a tool that outlives its deadline can still deliver its
	// result and exit instead of blocking forever.
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				r.log.Error("tool panicked", "tool", e.spec.Name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				done <- outcome{panicked: true}
			}
		}()
		res, err := e.tool.Call(ctx, args)
		done <- outcome{res: res, err: err}
	}()

	var o outcome
	select {
	case o = <-done:
	case <-ctx.Done():
		return r.interrupted(ctx, e.spec.Name, timeout)
	}
	switch {
	case o.panicked:
		return Result{Status: StatusFailure, Error: fmt.Sprintf("tool %s crashed (internal error); the call did not complete", e.spec.Name)}
	case o.err != nil:
		if ctx.Err() != nil {
			// The tool gave up because its context ended: say why in our
			// words rather than "context deadline exceeded".
			return r.interrupted(ctx, e.spec.Name, timeout)
		}
		res := o.res
		res.Status = StatusFailure
		res.Error = o.err.Error()
		return res
	}
	return o.res
}

func (r *Registry) interrupted(ctx context.Context, name string, timeout time.Duration) Result {
	if errors.Is(context.Cause(ctx), errTimeout) {
		return Result{Status: StatusFailure, Error: fmt.Sprintf("tool %s timed out after %s", name, timeout)}
	}
	return Result{Status: StatusFailure, Error: fmt.Sprintf("tool %s was cancelled", name)}
}

// finish normalises a result and enforces the output cap.
func (r *Registry) finish(res Result) Result {
	if res.Status == "" {
		res.Status = StatusSuccess
	}
	if res.Status == StatusFailure && res.Error == "" {
		res.Error = cmp.Or(res.Content, "tool failed without saying why")
	}
	if res.Status == StatusFailure && res.Content == "" {
		res.Content = res.Error
	}
	truncated := false
	if len(res.Output) > 0 && !json.Valid(res.Output) {
		// A bad Output would break every encoder that marshals the result;
		// keep the bytes, as a JSON string.
		res.Output, _ = json.Marshal(string(res.Output))
	}
	if len(res.Output) > r.maxOutput {
		res.Output = truncateJSON(res.Output, r.maxOutput)
		truncated = true
	}
	var t bool
	res.Content, t = truncateText(res.Content, r.maxOutput)
	truncated = truncated || t
	res.Error, t = truncateText(res.Error, r.maxOutput)
	truncated = truncated || t
	if truncated && res.Status == StatusSuccess {
		res.Status = StatusPartial
	}
	return res
}

// truncateText cuts s to at most limit bytes, at a rune boundary, with a
// marker that says how much was dropped: the model should know it saw only
// part.
func truncateText(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	const marker = "\n[truncated: %d of %d bytes shown]"
	keep := max(limit-len(fmt.Sprintf(marker, len(s), len(s))), 0)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + fmt.Sprintf(marker, keep, len(s)), true
}

// truncateJSON replaces an oversized JSON value with a marker object that
// holds the start of it as a string: cutting JSON anywhere would make it
// invalid, and a preview still helps the model.
func truncateJSON(raw json.RawMessage, limit int) json.RawMessage {
	// Escaping can grow the preview; a quarter of the budget leaves room
	// for it in all but pathological (control-character) output.
	n := limit / 4
	for n > 0 && !utf8.RuneStart(raw[n]) {
		n--
	}
	b, _ := json.Marshal(struct {
		Truncated  bool   `json:"truncated"`
		TotalBytes int    `json:"totalBytes"`
		Preview    string `json:"preview"`
	}{true, len(raw), string(raw[:n])})
	return b
}

// SetServerStatus records the health of a tool server, replacing what was
// recorded under the same name.
func (r *Registry) SetServerStatus(s ServerStatus) {
	r.mu.Lock()
	r.servers[s.Name] = s
	r.mu.Unlock()
}

// Servers returns the recorded tool servers, sorted by name.
func (r *Registry) Servers() []ServerStatus {
	r.mu.RLock()
	out := make([]ServerStatus, 0, len(r.servers))
	for _, s := range r.servers {
		out = append(out, s)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b ServerStatus) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ServerState is the health of a tool server.
type ServerState string

// Server states.
const (
	ServerConnected ServerState = "connected"
	ServerFailed    ServerState = "failed"
)

// ServerStatus is one tool server's health, for listing to operators.
type ServerStatus struct {
	Name  string      `json:"name"`
	State ServerState `json:"state"`
	// Error says why the server failed; empty when connected. It may quote
	// the server's stderr: it is for operators, not for end users.
	Error string `json:"error,omitempty"`
	// Tools is how many of the server's tools are registered.
	Tools int `json:"tools"`
}
