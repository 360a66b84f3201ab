package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
)

// Agent is a tenant's agent: its identity and which of its immutable
// versions is published. Its definition lives in its versions (Spec is the
// published one's, filled in on every read), so an agent is never edited in
// place: a change is a new version.
type Agent struct {
	ID        string
	Tenant    string
	CreatedBy string
	// Version is the published version, the one a run uses unless it pins
	// another; LatestVersion is the newest, a draft when above Version.
	Version       int
	LatestVersion int
	CreatedAt     time.Time
	// UpdatedAt moves with every new version, publication and archiving.
	UpdatedAt time.Time
	// ArchivedAt is set once the agent is archived: it starts no new run,
	// and its conversations stay readable.
	ArchivedAt *time.Time
	// Spec is the published version's definition (AgentVersion.Spec).
	Spec json.RawMessage
}

// AgentVersion is one immutable version of an agent's definition.
type AgentVersion struct {
	AgentID string
	Version int
	// Spec is the definition, opaque to the store: package agent owns its
	// shape. It is kept byte for byte.
	Spec json.RawMessage
	// Changes names what changed from the version before (its fields), as
	// the writer computed it; empty for version 1.
	Changes   []string
	CreatedBy string
	CreatedAt time.Time
	// PublishedAt is when the version was first published; nil for a draft
	// that never was.
	PublishedAt *time.Time
}

// AgentFilter narrows ListAgents.
type AgentFilter struct {
	// Archived lists archived agents too.
	Archived bool
}

// NewAgentVersion is a version AddAgentVersion stores.
type NewAgentVersion struct {
	AgentID string
	// Base is the LatestVersion the writer built on: when another version
	// was added since, the write is ErrConflict and nothing is stored, so
	// two admins editing at once never silently overwrite each other.
	Base    int
	Spec    json.RawMessage
	Changes []string
	// Publish makes the new version the published one at once.
	Publish bool
}

// TenantSettings are a tenant's own settings, changed by its admins.
type TenantSettings struct {
	Tenant string
	// DefaultAgentID is the agent of conversations that name none; "" for
	// the server's built-in default.
	DefaultAgentID string
	UpdatedBy      string
	UpdatedAt      time.Time
}

// ErrArchived: the agent is archived, so it takes no new version and no
// publication. It wraps ErrConflict.
var ErrArchived = fmt.Errorf("%w: the agent is archived", ErrConflict)

// Agents is the part of Store that keeps agents, their versions and the
// tenants' settings. Agents are tenant-wide: every principal of the tenant
// reads the same ones (who may change them is the caller's rule), and
// another tenant's agent is ErrNotFound.
type Agents interface {
	// CreateAgent stores a new agent of s's tenant, created by s's user,
	// with v as its version 1, published. ID and times are set when empty.
	CreateAgent(ctx context.Context, s chat.Scope, a Agent, v AgentVersion) (Agent, AgentVersion, error)
	// GetAgent reads an agent of s's tenant, archived or not.
	GetAgent(ctx context.Context, s chat.Scope, id string) (Agent, error)
	// ListAgents pages the tenant's agents, newest first (CreatedAt, then
	// id, descending).
	ListAgents(ctx context.Context, s chat.Scope, f AgentFilter, p Page) ([]Agent, string, error)
	// AddAgentVersion stores version Base+1 of an agent, by s's user. It is
	// ErrConflict when the agent's LatestVersion is not Base, ErrArchived
	// when the agent is archived.
	AddAgentVersion(ctx context.Context, s chat.Scope, v NewAgentVersion) (Agent, AgentVersion, error)
	// GetAgentVersion reads one version of an agent of s's tenant.
	GetAgentVersion(ctx context.Context, s chat.Scope, agentID string, version int) (AgentVersion, error)
	// ListAgentVersions pages an agent's versions, newest first; an agent
	// of another tenant is ErrNotFound.
	ListAgentVersions(ctx context.Context, s chat.Scope, agentID string, p Page) ([]AgentVersion, string, error)
	// PublishAgentVersion makes an existing version the published one (a
	// rollback is publishing an older one); the version's PublishedAt is
	// set if it was never published. Publishing the published version
	// changes nothing. ErrArchived when the agent is archived.
	PublishAgentVersion(ctx context.Context, s chat.Scope, agentID string, version int) (Agent, error)
	// ArchiveAgent archives an agent; archiving it again changes nothing
	// (ArchivedAt stays the first one).
	ArchiveAgent(ctx context.Context, s chat.Scope, agentID string) (Agent, error)

	// TenantSettings reads a tenant's settings: the zero value (with Tenant
	// set) when it has none.
	TenantSettings(ctx context.Context, tenant string) (TenantSettings, error)
	// SetTenantSettings stores the tenant's settings, by s's user.
	SetTenantSettings(ctx context.Context, s chat.Scope, t TenantSettings) (TenantSettings, error)
}

// FillAgent makes a a new agent of sc: ID set when empty, CreatedAt now
// when zero, UpdatedAt CreatedAt, version 1 published and latest.
func FillAgent(a *Agent, sc chat.Scope, now time.Time) {
	if a.ID == "" {
		a.ID = chat.NewID()
	}
	a.Tenant, a.CreatedBy = sc.Tenant, sc.User
	if a.CreatedAt.IsZero() {
		a.CreatedAt = now
	}
	a.UpdatedAt = a.CreatedAt
	a.Version, a.LatestVersion, a.ArchivedAt = 1, 1, nil
}

// VersionCursor is the page token of a list of versions that continues
// below version v.
func VersionCursor(v int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("v" + strconv.Itoa(v)))
}

// DecodeVersionCursor reads a token made by VersionCursor; "" is the first
// page (ok false). A token no backend issued is ErrBadCursor.
func DecodeVersionCursor(s string) (v int, ok bool, err error) {
	if s == "" {
		return 0, false, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 2 || b[0] != 'v' {
		return 0, false, ErrBadCursor
	}
	n, err := strconv.Atoi(string(b[1:]))
	if err != nil || n < 1 || strconv.Itoa(n) != string(b[1:]) {
		return 0, false, ErrBadCursor
	}
	return n, true, nil
}
