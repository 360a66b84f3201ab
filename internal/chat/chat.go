package chat

import (
	"time"
)

// Scope is the principal a query acts for: a tenant, a user in it, and
// the user's role there. Stores key rows by Tenant and User only; Role is
// what the principal may do, checked by the run service and the HTTP edge.
type Scope struct {
	Tenant string
	User   string
	// Role is the principal's role in its tenant. The zero value is a
	// member's: a scope the system makes for a stored run (a continuation,
	// a takeover) acts with no more than a member's rights.
	Role Role
}

// Role is what a principal may do in its tenant.
type Role string

// The roles. Admins manage the tenant's agents and settings; members use them.
const (
	Member Role = "member"
	Admin  Role = "admin"
)

// ParseRole reads a role's name; "" is a member.
func ParseRole(s string) (Role, bool) {
	switch Role(s) {
	case "", Member:
		return Member, true
	case Admin:
		return Admin, true
	}
	return "", false
}

// IsAdmin reports whether the principal is an admin of its tenant.
func (s Scope) IsAdmin() bool { return s.Role == Admin }

// RoleName is the principal's role as the API shows it.
func (s Scope) RoleName() string {
	if s.Role == Admin {
		return string(Admin)
	}
	return string(Member)
}

// Conversation is a thread of messages and runs.
type Conversation struct {
	ID     string
	Tenant string
	Owner  string
	Title  string
	Engine string // pinned engine, empty for the default
	// AgentID is the agent the conversation was bound to at its creation:
	// every run in it is that agent's. Empty for a conversation made before
	// agents, which follows the tenant's default agent.
	AgentID string
	// ActiveLeaf is the last message of the conversation's active branch
	// ("" while it has none): its history, and the context of its next run,
	// are the messages from the root down to it.
	ActiveLeaf string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}
