package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/tool"
)

// BuiltInID is the id of the built-in default agent: the server's own
// configuration (the models file's default model, the prompt components,
// the default tool set). It has no versions; runs record it as version 0.
const BuiltInID = "default"

// Errors of the service besides the store's sentinels (store.ErrNotFound
// for an agent or version that is not the tenant's, store.ErrArchived,
// store.ErrConflict) and *ValidationError.
var (
	// ErrForbidden: the principal is a member, and only admins may do this.
	ErrForbidden = errors.New("only an admin of the tenant may do this")
	// ErrBuiltIn: the built-in default agent is the server's configuration,
	// not a stored agent; it cannot be changed through the API.
	ErrBuiltIn = errors.New("the built-in default agent cannot be changed")
	// ErrVersionNotFound: the agent has no such version. It wraps store.ErrNotFound.
	ErrVersionNotFound = fmt.Errorf("agent version: %w", store.ErrNotFound)
	// ErrStale: the request built on a version that is no longer the
	// latest (If-Match). It wraps store.ErrConflict.
	ErrStale = fmt.Errorf("%w: the agent changed since the version the request built on", store.ErrConflict)
	// ErrDraftPinned: a member pinned a version never published.
	ErrDraftPinned = errors.New("only an admin may run a version that was never published")
)

// DefaultMaxStale bounds how long a replica trusts what it cached of an
// agent without hearing of a change: a safety net for an invalidation the
// bus lost (a Redis reconnect); the bus itself carries changes in well
// under a second.
const DefaultMaxStale = 30 * time.Second

// Config configures the service.
type Config struct {
	Store  store.Store
	Bus    bus.Bus
	Models *Models
	// Tools is the registry agents' tool names are checked against.
	Tools *tool.Registry
	// Engines are the engine names the router runs (local, chain,
	// openclaw); Gateways the OpenClaw gateways an agent may name.
	Engines  []string
	Gateways []string
	Logger   *slog.Logger
	// MaxStale bounds the life of a cached agent. Default DefaultMaxStale.
	MaxStale time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Service keeps a tenant's agents and their versions, and resolves the
// version a run executes. Every replica caches agents; a change made on
// one is announced on the bus (bus.ControlAgent), and every replica drops
// what it cached of that agent, so the change is in effect everywhere as
// soon as the message arrives. Versions are immutable and cached without
// expiry. Safe for concurrent use; Close ends its bus listener.
type Service struct {
	cfg Config
	log *slog.Logger
	now func() time.Time

	// mu is read-locked by every run's start (its agent and its tenant's
	// settings are looked up here): a plain mutex made a burst of starts
	// queue on it, handed from one starting goroutine to the next, a
	// convoy that the mutex profile of a thousand starts at once showed
	// waiting seconds (docs/benchmarks.md, "seventh round").
	mu       sync.RWMutex
	agents   map[agentKey]cached[store.Agent]
	settings map[string]cached[store.TenantSettings]
	versions map[versionKey]Spec
	// agentsSweep and settingsSweep are the sizes at which agents and
	// settings are next swept of expired copies (sweepExpired).
	agentsSweep, settingsSweep int
	// generation counts invalidations: a read that raced one is not cached.
	generation uint64
	// caching is whether the control stream is up: without it a change
	// could go unheard, so nothing is cached.
	caching bool

	cancel context.CancelFunc
	done   chan struct{}
	// listening is closed once the control stream is first up.
	listening     chan struct{}
	listeningOnce sync.Once
	// heard, when set (tests), is told of each control message applied.
	heard func(bus.Control)
}

type agentKey struct{ tenant, id string }

type versionKey struct {
	tenant, id string
	version    int
}

// cached is a copy read from the store and when it was read.
type cached[T any] struct {
	v  T
	at time.Time
}

// minSweep is the least size at which a cache of agents or settings is
// swept of its expired copies.
const minSweep = 1024

// sweepExpired drops the copies of m read maxStale or more before now, once
// m has reached *next entries, and sets *next to twice what is left (at
// least minSweep): a copy is read again once expired anyway, and without
// the sweep every agent and tenant a replica ever served would keep one
// for the process's life. Twice what is left keeps the sweeps' cost to a
// constant per insertion.
func sweepExpired[K comparable, T any](m map[K]cached[T], now time.Time, maxStale time.Duration, next *int) {
	if len(m) < *next {
		return
	}
	maps.DeleteFunc(m, func(_ K, c cached[T]) bool { return now.Sub(c.at) >= maxStale })
	*next = max(minSweep, 2*len(m))
}

// maxCachedVersions bounds the version cache; past it, it starts over.
const maxCachedVersions = 4096

// New starts the service and its bus listener.
func New(cfg Config) *Service {
	cfg.MaxStale = cmp.Or(cfg.MaxStale, DefaultMaxStale)
	s := &Service{cfg: cfg, log: cfg.Logger, now: cfg.Now,
		agents: map[agentKey]cached[store.Agent]{}, settings: map[string]cached[store.TenantSettings]{}, versions: map[versionKey]Spec{},
		agentsSweep: minSweep, settingsSweep: minSweep,
		done: make(chan struct{}), listening: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go s.listen(ctx)
	return s
}

// Listening is closed once the service hears the changes other replicas
// announce (its control stream is up): from then on it caches.
func (s *Service) Listening() <-chan struct{} { return s.listening }

// Close stops the bus listener.
func (s *Service) Close() {
	s.cancel()
	<-s.done
}

// listen drops cached agents as the bus announces their changes. While the
// control stream is down nothing is cached (every read goes to the store),
// since changes announced meanwhile would be missed.
func (s *Service) listen(ctx context.Context) {
	defer close(s.done)
	if s.cfg.Bus == nil {
		return
	}
	for ctx.Err() == nil {
		ch, err := s.cfg.Bus.Controls(ctx)
		if err != nil {
			s.log.Warn("agents: the control stream is unavailable; caching nothing until it is back", "err", err)
			s.flush(false)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		s.flush(true)
		s.listeningOnce.Do(func() { close(s.listening) })
		for c := range ch {
			if c.Kind == bus.ControlAgent {
				s.invalidate(c.Tenant, c.AgentID)
				if s.heard != nil {
					s.heard(c)
				}
			}
		}
		s.flush(false) // the stream ended: what came meanwhile is unknown
	}
}

// flush drops every cached agent and setting; caching says whether to
// cache again (the control stream is up).
func (s *Service) flush(caching bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.agents)
	clear(s.settings)
	s.generation++
	s.caching = caching
}

func (s *Service) invalidate(tenant, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == "" {
		delete(s.settings, tenant)
	} else {
		delete(s.agents, agentKey{tenant, id})
	}
	s.generation++
}

// announce tells every replica (this one first) that an agent or a
// tenant's settings changed.
func (s *Service) announce(ctx context.Context, tenant, id string) {
	s.invalidate(tenant, id)
	if s.cfg.Bus == nil {
		return
	}
	if err := s.cfg.Bus.PublishControl(context.WithoutCancel(ctx), bus.Control{Kind: bus.ControlAgent, Tenant: tenant, AgentID: id}); err != nil {
		// Other replicas see the change when their cached copy expires.
		s.log.WarnContext(ctx, "agents: could not announce a change on the bus", "agent_id", id, "err", err)
	}
}

// agent reads an agent through the cache.
func (s *Service) agent(ctx context.Context, sc chat.Scope, id string) (store.Agent, error) {
	key := agentKey{sc.Tenant, id}
	s.mu.RLock()
	c, ok := s.agents[key]
	gen, caching := s.generation, s.caching
	s.mu.RUnlock()
	if ok && s.now().Sub(c.at) < s.cfg.MaxStale {
		return c.v, nil
	}
	a, err := s.cfg.Store.GetAgent(ctx, sc, id)
	if err != nil {
		return store.Agent{}, err
	}
	s.mu.Lock()
	if caching && s.generation == gen {
		now := s.now()
		sweepExpired(s.agents, now, s.cfg.MaxStale, &s.agentsSweep)
		s.agents[key] = cached[store.Agent]{a, now}
	}
	s.mu.Unlock()
	return a, nil
}

// tenantSettings reads a tenant's settings through the cache.
func (s *Service) tenantSettings(ctx context.Context, tenant string) (store.TenantSettings, error) {
	s.mu.RLock()
	c, ok := s.settings[tenant]
	gen, caching := s.generation, s.caching
	s.mu.RUnlock()
	if ok && s.now().Sub(c.at) < s.cfg.MaxStale {
		return c.v, nil
	}
	t, err := s.cfg.Store.TenantSettings(ctx, tenant)
	if err != nil {
		return store.TenantSettings{}, err
	}
	s.mu.Lock()
	if caching && s.generation == gen {
		now := s.now()
		sweepExpired(s.settings, now, s.cfg.MaxStale, &s.settingsSweep)
		s.settings[tenant] = cached[store.TenantSettings]{t, now}
	}
	s.mu.Unlock()
	return t, nil
}

// spec reads one version's definition through the cache (versions never
// change), and whether the version was ever published.
func (s *Service) spec(ctx context.Context, sc chat.Scope, a store.Agent, version int) (Spec, bool, error) {
	if version == a.Version {
		sp, err := ParseSpec(a.Spec)
		return sp, true, err
	}
	key := versionKey{sc.Tenant, a.ID, version}
	s.mu.RLock()
	sp, ok := s.versions[key]
	s.mu.RUnlock()
	if ok {
		return sp, true, nil
	}
	v, err := s.cfg.Store.GetAgentVersion(ctx, sc, a.ID, version)
	if errors.Is(err, store.ErrNotFound) {
		return Spec{}, false, ErrVersionNotFound
	}
	if err != nil {
		return Spec{}, false, err
	}
	if sp, err = ParseSpec(v.Spec); err != nil {
		return Spec{}, false, err
	}
	if v.PublishedAt != nil {
		// Only published versions are cached: whether a draft was published
		// since matters to who may pin it.
		s.mu.Lock()
		if len(s.versions) >= maxCachedVersions {
			clear(s.versions)
		}
		s.versions[key] = sp
		s.mu.Unlock()
	}
	return sp, v.PublishedAt != nil, nil
}

// ---- the catalog a definition is checked against ----

func (s *Service) catalog(tenant string) Catalog {
	return Catalog{
		Model: func(name string) bool {
			_, _, ok := s.cfg.Models.Get(tenant, name)
			return ok
		},
		Tool: func(name string) (bool, bool) {
			if s.cfg.Tools == nil {
				return false, false
			}
			sp, ok := s.cfg.Tools.Get(name)
			return ok, ok && sp.Confirm == tool.ConfirmAlways
		},
		Engine: func(name string) bool {
			return slices.Contains(s.cfg.Engines, name) || slices.Contains(s.cfg.Gateways, name)
		},
	}
}

// ---- the API's operations ----

// Agent is an agent as the API shows it: the stored agent and its
// published definition.
type Agent struct {
	store.Agent
	Spec Spec
	// BuiltIn marks the built-in default agent.
	BuiltIn bool
}

func view(a store.Agent) (Agent, error) {
	sp, err := ParseSpec(a.Spec)
	if err != nil {
		return Agent{}, fmt.Errorf("agent %s: stored definition: %w", a.ID, err)
	}
	return Agent{Agent: a, Spec: sp}, nil
}

// BuiltIn is the built-in default agent as the API shows it.
func (s *Service) BuiltIn(sc chat.Scope) Agent {
	return Agent{Agent: store.Agent{ID: BuiltInID, Tenant: sc.Tenant}, BuiltIn: true,
		Spec: Spec{Name: "Default", Description: "The server's own agent: the default model, the prompt components and the default tools.", Model: DefaultModel}}
}

func requireAdmin(sc chat.Scope) error {
	if !sc.IsAdmin() {
		return ErrForbidden
	}
	return nil
}

// Create stores a new agent from a decoded definition (off: the tools the
// request asked not to confirm). Admins only.
func (s *Service) Create(ctx context.Context, sc chat.Scope, sp Spec, off map[string]bool) (Agent, error) {
	if err := requireAdmin(sc); err != nil {
		return Agent{}, err
	}
	sp.Normalize()
	if err := sp.Validate(s.catalog(sc.Tenant), off); err != nil {
		return Agent{}, err
	}
	a, _, err := s.cfg.Store.CreateAgent(ctx, sc, store.Agent{}, store.AgentVersion{Spec: sp.Marshal()})
	if err != nil {
		return Agent{}, err
	}
	return Agent{Agent: a, Spec: sp}, nil
}

// Get returns one of the tenant's agents (the built-in default too).
func (s *Service) Get(ctx context.Context, sc chat.Scope, id string) (Agent, error) {
	if id == BuiltInID {
		return s.BuiltIn(sc), nil
	}
	a, err := s.cfg.Store.GetAgent(ctx, sc, id)
	if err != nil {
		return Agent{}, err
	}
	return view(a)
}

// List pages the tenant's agents, newest first; archived ones with archived set.
func (s *Service) List(ctx context.Context, sc chat.Scope, archived bool, p store.Page) ([]Agent, string, error) {
	rows, next, err := s.cfg.Store.ListAgents(ctx, sc, store.AgentFilter{Archived: archived}, p)
	if err != nil {
		return nil, "", err
	}
	out := make([]Agent, 0, len(rows))
	for _, a := range rows {
		v, err := view(a)
		if err != nil {
			return nil, "", err
		}
		out = append(out, v)
	}
	return out, next, nil
}

// Update is a change to an agent's definition.
type Update struct {
	// Patch is a JSON merge patch of the definition.
	Patch json.RawMessage
	// Draft stores the new version without publishing it.
	Draft bool
	// IfVersion, when set, is the latest version the change was made on
	// (If-Match): another version since is ErrStale.
	IfVersion int
}

// Update makes a new version from the latest one with a patch applied,
// and publishes it unless it is a draft. A patch that changes nothing
// makes no version. Admins only.
func (s *Service) Update(ctx context.Context, sc chat.Scope, id string, u Update) (Agent, error) {
	if err := requireAdmin(sc); err != nil {
		return Agent{}, err
	}
	if id == BuiltInID {
		return Agent{}, ErrBuiltIn
	}
	for attempt := 0; ; attempt++ {
		a, err := s.cfg.Store.GetAgent(ctx, sc, id)
		if err != nil {
			return Agent{}, err
		}
		if a.ArchivedAt != nil {
			return Agent{}, store.ErrArchived
		}
		if u.IfVersion != 0 && u.IfVersion != a.LatestVersion {
			return Agent{}, ErrStale
		}
		latest := a.Spec
		if a.LatestVersion != a.Version {
			v, err := s.cfg.Store.GetAgentVersion(ctx, sc, id, a.LatestVersion)
			if err != nil {
				return Agent{}, err
			}
			latest = v.Spec
		}
		base, err := ParseSpec(latest)
		if err != nil {
			return Agent{}, err
		}
		sp, off, err := Patch(base, u.Patch)
		if err != nil {
			return Agent{}, err
		}
		sp.Normalize()
		if err := sp.Validate(s.catalog(sc.Tenant), off); err != nil {
			return Agent{}, err
		}
		changes := Changes(base, sp)
		if len(changes) == 0 {
			return view(a)
		}
		stored, _, err := s.cfg.Store.AddAgentVersion(ctx, sc, store.NewAgentVersion{AgentID: id, Base: a.LatestVersion,
			Spec: sp.Marshal(), Changes: changes, Publish: !u.Draft})
		if errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrArchived) && u.IfVersion == 0 && attempt < 3 {
			continue // another admin's version came first: apply the patch to it
		}
		if err != nil {
			return Agent{}, err
		}
		s.announce(ctx, sc.Tenant, id)
		return view(stored)
	}
}

// Version is one version of an agent as the API shows it.
type Version struct {
	store.AgentVersion
	Spec Spec
}

// Versions pages an agent's versions, newest first.
func (s *Service) Versions(ctx context.Context, sc chat.Scope, id string, p store.Page) ([]Version, string, error) {
	if id == BuiltInID {
		return []Version{}, "", nil
	}
	rows, next, err := s.cfg.Store.ListAgentVersions(ctx, sc, id, p)
	if err != nil {
		return nil, "", err
	}
	out := make([]Version, 0, len(rows))
	for _, v := range rows {
		sp, err := ParseSpec(v.Spec)
		if err != nil {
			return nil, "", err
		}
		out = append(out, Version{AgentVersion: v, Spec: sp})
	}
	return out, next, nil
}

// Version returns one version of an agent.
func (s *Service) Version(ctx context.Context, sc chat.Scope, id string, version int) (Version, error) {
	if id == BuiltInID {
		return Version{}, ErrVersionNotFound
	}
	if _, err := s.cfg.Store.GetAgent(ctx, sc, id); err != nil {
		return Version{}, err
	}
	v, err := s.cfg.Store.GetAgentVersion(ctx, sc, id, version)
	if errors.Is(err, store.ErrNotFound) {
		return Version{}, ErrVersionNotFound
	}
	if err != nil {
		return Version{}, err
	}
	sp, err := ParseSpec(v.Spec)
	return Version{AgentVersion: v, Spec: sp}, err
}

// Publish makes a version the published one: the version every new run of
// the agent uses from now on, on every replica. Publishing an older
// version is a rollback. Admins only.
func (s *Service) Publish(ctx context.Context, sc chat.Scope, id string, version int) (Agent, error) {
	if err := requireAdmin(sc); err != nil {
		return Agent{}, err
	}
	if id == BuiltInID {
		return Agent{}, ErrBuiltIn
	}
	if _, err := s.cfg.Store.GetAgent(ctx, sc, id); err != nil {
		return Agent{}, err
	}
	a, err := s.cfg.Store.PublishAgentVersion(ctx, sc, id, version)
	if errors.Is(err, store.ErrNotFound) {
		return Agent{}, ErrVersionNotFound
	}
	if err != nil {
		return Agent{}, err
	}
	s.announce(ctx, sc.Tenant, id)
	return view(a)
}

// Archive archives an agent: its conversations stay readable, new runs are
// refused. Admins only.
func (s *Service) Archive(ctx context.Context, sc chat.Scope, id string) (Agent, error) {
	if err := requireAdmin(sc); err != nil {
		return Agent{}, err
	}
	if id == BuiltInID {
		return Agent{}, ErrBuiltIn
	}
	a, err := s.cfg.Store.ArchiveAgent(ctx, sc, id)
	if err != nil {
		return Agent{}, err
	}
	s.announce(ctx, sc.Tenant, id)
	return view(a)
}

// Settings are a tenant's agent settings as the API shows them.
type Settings struct {
	store.TenantSettings
	// DefaultAgent is the agent of conversations that name none: the
	// tenant's default when it names one that can run, else BuiltInID.
	DefaultAgent string
}

// Settings reads the tenant's settings.
func (s *Service) Settings(ctx context.Context, sc chat.Scope) (Settings, error) {
	t, err := s.cfg.Store.TenantSettings(ctx, sc.Tenant)
	if err != nil {
		return Settings{}, err
	}
	def, err := s.defaultAgent(ctx, sc, t)
	return Settings{TenantSettings: t, DefaultAgent: def}, err
}

// SetDefault names the tenant's default agent ("" or BuiltInID for the
// built-in one). Admins only; an archived agent cannot be the default.
func (s *Service) SetDefault(ctx context.Context, sc chat.Scope, id string) (Settings, error) {
	if err := requireAdmin(sc); err != nil {
		return Settings{}, err
	}
	if id == BuiltInID {
		id = ""
	}
	if id != "" {
		a, err := s.cfg.Store.GetAgent(ctx, sc, id)
		if errors.Is(err, store.ErrNotFound) {
			return Settings{}, &ValidationError{Field: "defaultAgentId", Message: fmt.Sprintf("%q is not an agent of this tenant", id)}
		}
		if err != nil {
			return Settings{}, err
		}
		if a.ArchivedAt != nil {
			return Settings{}, &ValidationError{Field: "defaultAgentId", Message: "the agent is archived"}
		}
	}
	t, err := s.cfg.Store.SetTenantSettings(ctx, sc, store.TenantSettings{DefaultAgentID: id})
	if err != nil {
		return Settings{}, err
	}
	s.announce(ctx, sc.Tenant, "")
	return Settings{TenantSettings: t, DefaultAgent: cmp.Or(id, BuiltInID)}, nil
}

// defaultAgent is the agent a new conversation without one is bound to:
// the tenant's default unless it is archived or gone, then the built-in.
func (s *Service) defaultAgent(ctx context.Context, sc chat.Scope, t store.TenantSettings) (string, error) {
	if t.DefaultAgentID == "" {
		return BuiltInID, nil
	}
	a, err := s.agent(ctx, sc, t.DefaultAgentID)
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && a.ArchivedAt != nil):
		return BuiltInID, nil
	case err != nil:
		return "", err
	}
	return a.ID, nil
}

// ---- what runs use ----

// Ref names the agent version a run asks for.
type Ref struct {
	// AgentID is the agent; "" for the tenant's default.
	AgentID string
	// Version pins a version; 0 for the published one.
	Version int
}

// Resolve returns the agent version a new run executes: ref's agent (the
// tenant's default when it names none) at ref's version (the published one
// when it pins none). An archived agent is store.ErrArchived; a version a
// member pins that was never published is ErrDraftPinned.
func (s *Service) Resolve(ctx context.Context, sc chat.Scope, ref Ref) (*engine.Agent, error) {
	id := ref.AgentID
	if id == "" {
		t, err := s.tenantSettings(ctx, sc.Tenant)
		if err != nil {
			return nil, err
		}
		if id, err = s.defaultAgent(ctx, sc, t); err != nil {
			return nil, err
		}
	}
	if id == BuiltInID {
		if ref.Version != 0 {
			return nil, ErrVersionNotFound
		}
		return s.builtIn(sc.Tenant)
	}
	a, err := s.agent(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	if a.ArchivedAt != nil {
		return nil, store.ErrArchived
	}
	version := cmp.Or(ref.Version, a.Version)
	if version > a.LatestVersion {
		// The cached agent may predate the version: ask the store.
		if a, err = s.cfg.Store.GetAgent(ctx, sc, id); err != nil {
			return nil, err
		}
	}
	sp, published, err := s.spec(ctx, sc, a, version)
	if err != nil {
		return nil, err
	}
	if !published && !sc.IsAdmin() {
		return nil, ErrDraftPinned
	}
	return s.resolved(sc.Tenant, a.ID, version, sp)
}

// Exact returns the agent version a run recorded, for its continuation:
// that version whatever was published or archived since.
func (s *Service) Exact(ctx context.Context, sc chat.Scope, id string, version int) (*engine.Agent, error) {
	if id == BuiltInID {
		return s.builtIn(sc.Tenant)
	}
	a, err := s.agent(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	sp, _, err := s.spec(ctx, sc, a, version)
	if err != nil {
		return nil, err
	}
	return s.resolved(sc.Tenant, id, version, sp)
}

func (s *Service) builtIn(tenant string) (*engine.Agent, error) {
	m, info, ok := s.cfg.Models.Get(tenant, DefaultModel)
	if !ok {
		return nil, fmt.Errorf("the built-in agent's model %q is not available", DefaultModel)
	}
	return &engine.Agent{ID: BuiltInID, Model: m, ModelName: DefaultModel, Accepts: info.Accepts}, nil
}

// ErrModelUnavailable: the agent's model is no longer in the models file
// (or no longer the tenant's).
var ErrModelUnavailable = errors.New("the agent's model is not available")

func (s *Service) resolved(tenant, id string, version int, sp Spec) (*engine.Agent, error) {
	m, info, ok := s.cfg.Models.Get(tenant, sp.Model)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrModelUnavailable, sp.Model)
	}
	out := &engine.Agent{ID: id, Version: version, Model: m, ModelName: sp.Model, Accepts: info.Accepts, Instructions: sp.Instructions, Confirm: sp.Confirm,
		MaxIterations: sp.MaxIterations, Temperature: sp.Temperature, Multitask: chat.MultitaskStrategy(sp.MultitaskStrategy)}
	if sp.Tools != nil {
		out.Tools = &engine.AllowedTools{Names: slices.Clone(*sp.Tools)}
	}
	if sp.Knowledge != nil {
		out.Knowledge = slices.Clone(*sp.Knowledge)
	}
	switch {
	case sp.Engine == "" || slices.Contains(s.cfg.Engines, sp.Engine):
		out.Engine = sp.Engine
	case slices.Contains(s.cfg.Gateways, sp.Engine):
		out.Engine, out.Gateway = EngineOpenClaw, sp.Engine
	default:
		// A gateway removed from the configuration since: the router's choice.
		s.log.Warn("agent names an engine the server no longer runs; the server chooses", "agent_id", id, "engine", sp.Engine)
	}
	return out, nil
}

// EngineOpenClaw is the engine of runs on an OpenClaw gateway.
const EngineOpenClaw = "openclaw"

// ETag is the entity tag of an agent's latest version, for If-Match.
func ETag(a Agent) string { return `"` + strconv.Itoa(a.LatestVersion) + `"` }
