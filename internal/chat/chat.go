package chat

import (
	"time"

	"github.com/google/uuid"
)

// NewID returns a new sortable opaque id (UUIDv7).
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

// Scope is the principal a query acts for: a tenant and a user in it.
type Scope struct {
	Tenant string
	User   string
}

// Conversation is a thread of messages and runs.
type Conversation struct {
	ID        string
	Tenant    string
	Owner     string
	Title     string
	Engine    string // pinned engine, empty for the default
	CreatedAt time.Time
	UpdatedAt time.Time
}
