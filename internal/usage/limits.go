// Package usage holds the limits on what tenants, users and agents may
// spend: runs per minute, tokens per day and per month, cost per month.
//
// Limits come from the environment (a default for every tenant) and from
// the "limits" object of the engine configuration file, which overrides
// them per tenant and adds limits per user and per agent; the file is
// read again when it changes, without a restart. A Limits answers, for
// one start, the store.Limit list that the store checks under its
// per-tenant lock (so replicas sharing a store cannot admit more than a
// limit allows), and for a running run whether its budgets still hold.
//
// Windows are UTC: a day starts at midnight, a month on its first day; a
// runs-per-minute window is the minute before the start.
package usage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sync"
	"time"

	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/store"
)

// Policy is a set of limits. Zero keeps the limit of the level below (the
// environment's for a tenant; none for a user or an agent); a negative
// value lifts it.
type Policy struct {
	RunsPerMinute  int64 `json:"runsPerMinute,omitempty"`
	TokensPerDay   int64 `json:"tokensPerDay,omitempty"`
	TokensPerMonth int64 `json:"tokensPerMonth,omitempty"`
	// CostPerMonth is in units of the models' currency (e.g. 25.5 USD).
	CostPerMonth float64 `json:"costPerMonth,omitempty"`
}

// over is p with o's set fields in its place.
func (p Policy) over(o Policy) Policy {
	if o.RunsPerMinute != 0 {
		p.RunsPerMinute = o.RunsPerMinute
	}
	if o.TokensPerDay != 0 {
		p.TokensPerDay = o.TokensPerDay
	}
	if o.TokensPerMonth != 0 {
		p.TokensPerMonth = o.TokensPerMonth
	}
	if o.CostPerMonth != 0 {
		p.CostPerMonth = o.CostPerMonth
	}
	return p
}

// TenantLimits are one tenant's limits in the file: its own (overriding
// the environment's), and those of its users and agents, by id; "*" names
// every user (every agent) without an entry of their own.
type TenantLimits struct {
	Policy
	Users  map[string]Policy `json:"users,omitempty"`
	Agents map[string]Policy `json:"agents,omitempty"`
}

// File is the "limits" object of the engine configuration file:
//
//	"limits": {
//	  "tenants": {
//	    "acme": {"runsPerMinute": 120, "costPerMonth": 500,
//	             "users":  {"*": {"tokensPerDay": 200000}, "alice": {"tokensPerDay": 1000000}},
//	             "agents": {"01J…": {"tokensPerMonth": 5000000}}}
//	  }
//	}
type File struct {
	// Tenants by id; "*" names every tenant without an entry.
	Tenants map[string]TenantLimits `json:"tenants,omitempty"`
}

// Config configures Limits.
type Config struct {
	// Defaults are every tenant's limits (the environment's).
	Defaults Policy
	// Path is the engine configuration file; "" for none.
	Path   string
	Logger *slog.Logger
}

// Limits are the limits in force. Safe for concurrent use.
type Limits struct {
	def  Policy
	path string
	log  *slog.Logger

	mu   sync.Mutex
	file File
	mod  time.Time
	size int64
}

// New reads the file once; a file that is missing or wrong is an error.
func New(cfg Config) (*Limits, error) {
	l := &Limits{def: cfg.Defaults, path: cfg.Path, log: cfg.Logger}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if err := validate(cfg.Defaults); err != nil {
		return nil, err
	}
	if l.path != "" {
		if _, err := l.reload(true); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// ParseFile reads the "limits" object of an engine configuration file.
func ParseFile(b []byte) (File, error) {
	var top struct {
		Limits json.RawMessage `json:"limits"`
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return File{}, fmt.Errorf("limits: %w", err)
	}
	var f File
	if len(top.Limits) == 0 || string(top.Limits) == "null" {
		return f, nil
	}
	d := json.NewDecoder(bytes.NewReader(top.Limits))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil {
		return File{}, fmt.Errorf("limits: %w", err)
	}
	for name, t := range f.Tenants {
		if err := validate(t.Policy); err != nil {
			return File{}, fmt.Errorf("limits of tenant %q: %w", name, err)
		}
		for u, p := range t.Users {
			if err := validate(p); err != nil {
				return File{}, fmt.Errorf("limits of user %q of tenant %q: %w", u, name, err)
			}
		}
		for a, p := range t.Agents {
			if err := validate(p); err != nil {
				return File{}, fmt.Errorf("limits of agent %q of tenant %q: %w", a, name, err)
			}
		}
	}
	return f, nil
}

func validate(p Policy) error {
	if math.IsNaN(p.CostPerMonth) || math.IsInf(p.CostPerMonth, 0) {
		return errors.New("costPerMonth must be a number")
	}
	return nil
}

// reload reads the file again when it changed since last read. A file
// that became wrong keeps the limits last read (and is logged), unless
// first is set.
func (l *Limits) reload(first bool) (File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.path == "" {
		return l.file, nil
	}
	fi, err := os.Stat(l.path)
	if err == nil && !first && fi.ModTime().Equal(l.mod) && fi.Size() == l.size {
		return l.file, nil
	}
	var b []byte
	if err == nil {
		b, err = os.ReadFile(l.path)
	}
	var f File
	if err == nil {
		f, err = ParseFile(b)
	}
	if err != nil {
		if first {
			return File{}, err
		}
		l.log.Error("the limits in the engine configuration file could not be read again; the last ones read stay in force", "err", err)
		if fi != nil {
			l.mod, l.size = fi.ModTime(), fi.Size()
		}
		return l.file, nil
	}
	if !first {
		l.log.Info("limits reloaded from the engine configuration file", "tenants", len(f.Tenants))
	}
	l.file, l.mod, l.size = f, fi.ModTime(), fi.Size()
	return f, nil
}

// Policies are the limits in force for one start: the tenant's, the
// user's and the agent's (zero where there are none).
type Policies struct {
	Tenant, User, Agent Policy
}

// For reads the limits in force for user's runs on agent in tenant.
func (l *Limits) For(tenant, user, agent string) Policies {
	if l == nil {
		return Policies{}
	}
	f, _ := l.reload(false)
	t, ok := f.Tenants[tenant]
	if !ok {
		t = f.Tenants["*"]
	}
	out := Policies{Tenant: l.def.over(t.Policy)}
	if p, ok := t.Users[user]; ok {
		out.User = p
	} else {
		out.User = t.Users["*"]
	}
	if agent != "" {
		if p, ok := t.Agents[agent]; ok {
			out.Agent = p
		} else {
			out.Agent = t.Agents["*"]
		}
	}
	return out
}

// Windows are the calendar windows of the budgets at now (UTC).
func Windows(now time.Time) (day, nextDay, month, nextMonth time.Time) {
	now = now.UTC()
	day = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	month = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	return day, day.AddDate(0, 0, 1), month, month.AddDate(0, 1, 0)
}

// StoreLimits are the limits p puts on a start at now, as the store checks
// them: the runs limits first (a refusal is rate_limited), then the
// budgets (quota_exceeded); a user's before the agent's before the
// tenant's.
func (p Policies) StoreLimits(tenant, user, agent string, now time.Time) []store.Limit {
	day, nextDay, month, nextMonth := Windows(now)
	var runs, budgets []store.Limit
	add := func(scope string, pol Policy) {
		l := store.Limit{Scope: scope}
		switch scope {
		case store.ScopeUser:
			l.User = user
		case store.ScopeAgent:
			l.AgentID = agent
		}
		if pol.RunsPerMinute > 0 {
			r := l
			r.Kind, r.Max, r.Since, r.Reset = store.LimitRunsPerMinute, pol.RunsPerMinute, now.Add(-time.Minute), now.Add(time.Minute)
			runs = append(runs, r)
		}
		if pol.TokensPerDay > 0 {
			b := l
			b.Kind, b.Max, b.Since, b.Reset = store.LimitTokensPerDay, pol.TokensPerDay, day, nextDay
			budgets = append(budgets, b)
		}
		if pol.TokensPerMonth > 0 {
			b := l
			b.Kind, b.Max, b.Since, b.Reset = store.LimitTokensPerMonth, pol.TokensPerMonth, month, nextMonth
			budgets = append(budgets, b)
		}
		if pol.CostPerMonth > 0 {
			b := l
			b.Kind, b.Max, b.Since, b.Reset = store.LimitCostPerMonth, CostNanos(pol.CostPerMonth), month, nextMonth
			budgets = append(budgets, b)
		}
	}
	add(store.ScopeUser, p.User)
	if agent != "" {
		add(store.ScopeAgent, p.Agent)
	}
	add(store.ScopeTenant, p.Tenant)
	return append(runs, budgets...)
}

// CostNanos is a cost in currency units as nano-units.
func CostNanos(units float64) int64 {
	return int64(math.Round(units * llm.NanosPerUnit))
}

// Units is a cost in nano-units as currency units.
func Units(nanos int64) float64 {
	return float64(nanos) / llm.NanosPerUnit
}

// Refusal is a start (or a running run's next model call) that a limit
// refuses, described for the client.
type Refusal struct {
	// Code is errcode.RateLimited for a runs limit, else errcode.QuotaExceeded.
	Code  string
	Limit store.Limit
	// Used is what the window held.
	Used int64
	// Reset is when the limit admits again.
	Reset time.Time
	// At is when the refusal was made (the limits' clock): Retry-After
	// counts from it.
	At time.Time
}

func (r *Refusal) Error() string { return r.Message(time.Time{}) }

// Refused describes a store's refusal of a start at now.
func Refused(qe *store.QuotaError, now time.Time) *Refusal {
	r := &Refusal{Code: errcode.QuotaExceeded, Limit: qe.Limit, Used: qe.Used, Reset: qe.Limit.Reset, At: now}
	if qe.Limit.Runs() {
		r.Code = errcode.RateLimited
		if !qe.Oldest.IsZero() {
			r.Reset = qe.Oldest.Add(time.Minute)
		}
	}
	return r
}

var kinds = map[string]string{
	store.LimitRunsPerMinute:  "runs per minute",
	store.LimitTokensPerDay:   "tokens per day",
	store.LimitTokensPerMonth: "tokens per month",
	store.LimitCostPerMonth:   "cost per month",
}

// Message is the refusal's text for a person: which limit, how much, and
// when it resets (in how long, counted from now when now is set).
func (r *Refusal) Message(now time.Time) string {
	whose := "this workspace's"
	switch r.Limit.Scope {
	case store.ScopeUser:
		whose = "your"
	case store.ScopeAgent:
		whose = "this agent's"
	}
	amount := fmt.Sprintf("%d", r.Limit.Max)
	if r.Limit.Cost() {
		amount = fmt.Sprintf("%.2f", Units(r.Limit.Max))
	}
	msg := fmt.Sprintf("%s limit of %s %s is reached; it resets at %s", whose, amount, kinds[r.Limit.Kind], r.Reset.UTC().Format(time.RFC3339))
	if !now.IsZero() {
		msg += fmt.Sprintf(" (in %s)", RetryAfter(r.Reset, now))
	}
	return msg
}

// RetryAfter is how long from now until reset, in whole seconds, at least one.
func RetryAfter(reset, now time.Time) time.Duration {
	return max(reset.Sub(now).Round(time.Second), time.Second)
}

// PolicyName names the refusing limit in the IETF RateLimit headers:
// its scope and kind, e.g. "user-tokens_per_day".
func (r *Refusal) PolicyName() string { return r.Limit.Scope + "-" + r.Limit.Kind }

// Window is the limit's window length in seconds (the RateLimit-Policy w).
func (r *Refusal) Window() int64 {
	if r.Limit.Runs() {
		return 60
	}
	return int64(r.Limit.Reset.Sub(r.Limit.Since) / time.Second)
}
