package agent

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/anthropic"
	"github.com/agentchat/agentchat/internal/llm/openai"
	"github.com/agentchat/agentchat/internal/llm/scripted"
)

// The providers a models file entry may name.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderScripted  = "scripted"
)

// DefaultModel is the model the environment configures (AGENTCHAT_LLM,
// AGENTCHAT_MODEL and the provider's variables): the model of the built-in
// default agent and of agents that name none.
const DefaultModel = "default"

// ModelsFile is the JSON file AGENTCHAT_MODELS_FILE names:
//
//	{"models": {
//	  "fast":    {"provider": "openai", "model": "gpt-4o-mini", "apiKeyEnv": "OPENAI_API_KEY", "contextWindow": 128000},
//	  "local":   {"provider": "openai", "model": "qwen2.5:7b", "baseURL": "http://127.0.0.1:11434/v1"},
//	  "offline": {"provider": "scripted"}
//	}}
//
// Unknown fields are refused, so a misspelt key is an error rather than a
// setting silently ignored. Later features add their own fields to Model
// (prices, what a model accepts).
type ModelsFile struct {
	Models map[string]ModelEntry `json:"models"`
}

// ModelEntry is one model a server may call.
type ModelEntry struct {
	// Provider is ProviderOpenAI (any OpenAI-compatible endpoint),
	// ProviderAnthropic or ProviderScripted (the offline model).
	Provider string `json:"provider"`
	// Model is the provider's model id; required but for scripted.
	Model string `json:"model,omitempty"`
	// BaseURL is the API root; empty for the provider's official one.
	BaseURL string `json:"baseURL,omitempty"`
	// APIKeyEnv names the environment variable holding the key (or, when
	// that is empty, the variable with _FILE appended names a file holding
	// it). The key itself never appears in the file, the API, a log line
	// or an error.
	APIKeyEnv string `json:"apiKeyEnv,omitempty"`
	// ContextWindow is the model's context in tokens, shown to clients; 0 unknown.
	ContextWindow int `json:"contextWindow,omitempty"`
	// Tenants, when set, are the only tenants that may use the model.
	Tenants []string `json:"tenants,omitempty"`
	// Price, when set, is what the model's tokens cost per million
	// ({"input": 2.5, "cachedInput": 1.25, "output": 10, "currency": "USD"});
	// each call's cost is computed with the price of its time, so a later
	// change does not rewrite the usage already recorded.
	Price *llm.Price `json:"price,omitempty"`
	// Accepts lists the media types beyond images, PDFs and text files
	// the model takes as attached files (exact, or a family as "audio/*"),
	// e.g. ["audio/wave"]; an attachment of any other type is refused
	// before its run starts. (Uploads must allow the type too:
	// AGENTCHAT_FILE_TYPES.)
	Accepts []string `json:"accepts,omitempty"`
}

// ModelInfo is what clients may know of a model: never its URL or key.
type ModelInfo struct {
	Name          string
	Provider      string
	Model         string
	ContextWindow int
	// Accepts is the models file's accepts: the media types the model
	// takes as files beyond images, PDFs and text.
	Accepts []string
}

// ModelOptions are what every model built from an entry shares.
type ModelOptions struct {
	// Timeout and MaxRetries are the adapters' (llm.DefaultTimeout and
	// llm.DefaultMaxRetries when zero).
	Timeout    time.Duration
	MaxRetries int
	// HTTPClient makes the providers' requests (http.DefaultClient when nil).
	HTTPClient *http.Client
	// ScriptedTokenDelay paces the offline model.
	ScriptedTokenDelay time.Duration
	// ScriptedHint ends the offline model's plain answers.
	ScriptedHint string
	// Observe wraps each model built (metrics and spans); nil keeps it as built.
	Observe func(m llm.Model, provider, model string) llm.Model
}

// BuildModel makes the model an entry describes, with key as its API key.
func BuildModel(e ModelEntry, key string, o ModelOptions) (llm.Model, error) {
	var m llm.Model
	var err error
	switch e.Provider {
	case ProviderOpenAI:
		m, err = openai.New(openai.Config{BaseURL: e.BaseURL, APIKey: key, Model: e.Model, Timeout: o.Timeout, MaxRetries: o.MaxRetries, HTTPClient: o.HTTPClient})
	case ProviderAnthropic:
		m, err = anthropic.New(anthropic.Config{BaseURL: e.BaseURL, APIKey: key, Model: e.Model, Timeout: o.Timeout, MaxRetries: o.MaxRetries, HTTPClient: o.HTTPClient})
	case ProviderScripted:
		m = scripted.New(scripted.Config{TokenDelay: o.ScriptedTokenDelay, Hint: o.ScriptedHint})
	default:
		return nil, fmt.Errorf("provider %q is not openai, anthropic or scripted", e.Provider)
	}
	if err != nil {
		return nil, err
	}
	// Every call ends with its usage, priced: the provider's, or an
	// estimate where it reports none.
	m = llm.Metered(m, e.Provider, cmp.Or(e.Model, e.Provider), e.Price)
	if o.Observe != nil {
		m = o.Observe(m, e.Provider, cmp.Or(e.Model, e.Provider))
	}
	return m, nil
}

// modelName is what a models file may call a model: a name an agent's
// definition and a URL can carry as they are.
var currency = regexp.MustCompile(`^[A-Z]{3}$`)

var modelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)

// model is one usable model of a loaded file.
type model struct {
	info    ModelInfo
	tenants []string
	llm     llm.Model
}

// modelSet is one load of the models: immutable once built.
type modelSet map[string]*model

// Models is the set of models a server may call: the environment's default
// and the models file's, reloaded when the file changes.
//
// Reloading: each use stats the file (one stat call; the prompt components
// are read the same way) and re-reads it when its modification time, size
// or identity changed. A stat poll rather than fsnotify, because it needs
// no goroutine, sees an edit at the very next run on every replica with no
// event to lose, and follows what editors and Kubernetes do to a file
// (write a new file and rename it over the old one, or swap a symlink),
// which a watch on the file itself misses. A file that does not load (bad
// JSON, an unknown provider, a key variable that is empty) leaves the last
// good set in force, and is logged once, with the reason, until it changes.
// Safe for concurrent use.
type Models struct {
	path   string
	def    *model
	getenv func(string) string
	opts   ModelOptions
	log    *slog.Logger

	mu   sync.Mutex
	set  modelSet
	seen fileState // the file as last read, good or bad
}

type fileState struct {
	mod  time.Time
	size int64
	fi   os.FileInfo
}

func (a fileState) same(b os.FileInfo) bool {
	return a.fi != nil && a.mod.Equal(b.ModTime()) && a.size == b.Size() && os.SameFile(a.fi, b)
}

// ModelsConfig configures Models.
type ModelsConfig struct {
	// Path is the models file; empty serves the default model alone.
	Path string
	// Default is the environment's model and what it is.
	Default     llm.Model
	DefaultInfo ModelInfo
	// Getenv reads the variables apiKeyEnv names (os.Getenv when nil).
	Getenv  func(string) string
	Options ModelOptions
	Logger  *slog.Logger
}

// NewModels loads the models file. At start a file that does not load is
// an error: a server does not begin with a configuration it cannot read.
func NewModels(cfg ModelsConfig) (*Models, error) {
	m := &Models{path: cfg.Path, getenv: cfg.Getenv, opts: cfg.Options, log: cfg.Logger}
	if m.getenv == nil {
		m.getenv = os.Getenv
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Default != nil {
		info := cfg.DefaultInfo
		info.Name = DefaultModel
		m.def = &model{info: info, llm: cfg.Default}
	}
	m.set = modelSet{}
	if m.def != nil {
		m.set[DefaultModel] = m.def
	}
	if m.path == "" {
		return m, nil
	}
	fi, err := os.Stat(m.path)
	if err != nil {
		return nil, fmt.Errorf("models file: %w", err)
	}
	set, err := m.load()
	if err != nil {
		return nil, fmt.Errorf("models file %s: %w", m.path, err)
	}
	m.set, m.seen = set, fileState{fi.ModTime(), fi.Size(), fi}
	return m, nil
}

// current is the set in force, reloaded first when the file changed.
func (m *Models) current() modelSet {
	// Without a models file the set never changes after NewModels: every
	// run's start asks, and a lock here made a burst of starts queue on it
	// (docs/benchmarks.md, "seventh round").
	if m.path == "" {
		return m.set
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	fi, err := os.Stat(m.path)
	if err != nil {
		if m.seen.fi != nil {
			m.log.Warn("models file unreadable; keeping the models last loaded", "path", m.path, "err", err)
			m.seen = fileState{}
		}
		return m.set
	}
	if m.seen.same(fi) {
		return m.set
	}
	m.seen = fileState{fi.ModTime(), fi.Size(), fi}
	set, err := m.load()
	if err != nil {
		m.log.Warn("models file does not load; keeping the models last loaded", "path", m.path, "err", err)
		return m.set
	}
	m.set = set
	m.log.Info("models file reloaded", "path", m.path, "models", len(set))
	return set
}

// load reads and builds the file's models. Its errors name the entry and
// the field, never a key.
func (m *Models) load() (modelSet, error) {
	raw, err := os.ReadFile(m.path)
	if err != nil {
		return nil, err
	}
	var f ModelsFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a models file ({\"models\": {\"<name>\": {…}}}): %w", err)
	}
	if f.Models == nil {
		return nil, errors.New(`no "models" object`)
	}
	set := modelSet{}
	if m.def != nil {
		set[DefaultModel] = m.def
	}
	names := make([]string, 0, len(f.Models))
	for name := range f.Models {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		e := f.Models[name]
		built, err := m.build(name, e)
		if err != nil {
			return nil, fmt.Errorf("model %q: %w", name, err)
		}
		set[name] = built
	}
	return set, nil
}

func (m *Models) build(name string, e ModelEntry) (*model, error) {
	if !modelName.MatchString(name) {
		return nil, errors.New("a model's name is 1 to 64 letters, digits and . _ : - (starting with a letter or digit)")
	}
	switch e.Provider {
	case ProviderOpenAI, ProviderAnthropic:
		if strings.TrimSpace(e.Model) == "" {
			return nil, errors.New(`"model" (the provider's model id) is required`)
		}
	case ProviderScripted:
	default:
		return nil, fmt.Errorf(`"provider" must be openai, anthropic or scripted, not %q`, e.Provider)
	}
	if e.BaseURL != "" {
		u, err := url.Parse(e.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			// The URL is not echoed: a mistyped one may carry credentials.
			return nil, errors.New(`"baseURL" must be an http(s) URL without credentials`)
		}
	}
	if e.ContextWindow < 0 {
		return nil, errors.New(`"contextWindow" must not be negative`)
	}
	if p := e.Price; p != nil {
		if p.Input < 0 || p.CachedInput < 0 || p.Output < 0 {
			return nil, errors.New(`"price" must not be negative`)
		}
		if p.Currency != "" && !currency.MatchString(p.Currency) {
			return nil, errors.New(`"price.currency" is a three-letter ISO 4217 code such as USD`)
		}
	}
	key := ""
	if e.APIKeyEnv != "" {
		if !envName.MatchString(e.APIKeyEnv) {
			return nil, errors.New(`"apiKeyEnv" must name an environment variable`)
		}
		key = strings.TrimSpace(m.getenv(e.APIKeyEnv))
		if key == "" {
			if path := m.getenv(e.APIKeyEnv + "_FILE"); path != "" {
				b, err := os.ReadFile(path)
				if err != nil {
					return nil, fmt.Errorf("the key file %s_FILE names cannot be read: %w", e.APIKeyEnv, err)
				}
				key = strings.TrimSpace(string(b))
			}
		}
		if key == "" {
			return nil, fmt.Errorf("the variable %s (its apiKeyEnv) is empty", e.APIKeyEnv)
		}
	}
	if e.Provider == ProviderAnthropic && key == "" {
		return nil, errors.New(`an anthropic model needs "apiKeyEnv"`)
	}
	l, err := BuildModel(e, key, m.opts)
	if err != nil {
		return nil, err
	}
	return &model{info: ModelInfo{Name: name, Provider: e.Provider, Model: cmp.Or(e.Model, e.Provider), ContextWindow: e.ContextWindow, Accepts: e.Accepts},
		tenants: e.Tenants, llm: l}, nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (mm *model) allows(tenant string) bool {
	return len(mm.tenants) == 0 || slices.Contains(mm.tenants, tenant)
}

// Get returns the model a tenant may use by that name.
func (m *Models) Get(tenant, name string) (llm.Model, ModelInfo, bool) {
	mm, ok := m.current()[name]
	if !ok || !mm.allows(tenant) {
		return nil, ModelInfo{}, false
	}
	return mm.llm, mm.info, true
}

// List returns the models a tenant may use, by name.
func (m *Models) List(tenant string) []ModelInfo {
	set := m.current()
	out := make([]ModelInfo, 0, len(set))
	for _, mm := range set {
		if mm.allows(tenant) {
			out = append(out, mm.info)
		}
	}
	slices.SortFunc(out, func(a, b ModelInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}
