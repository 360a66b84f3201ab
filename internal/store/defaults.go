package store

import (
	"cmp"
	"encoding/json"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
)

// Row defaults: what a backend fills in before it inserts a row, written
// once so that a row means the same whichever backend wrote it. Each takes
// the backend's now (an insert's rows share one time) and fills only what
// the caller left empty, unless its comment says otherwise. The stored form
// of a time (UTC, whole milliseconds) is the backend's to make.

// FillConversation makes c a new conversation of sc: ID set when empty,
// CreatedAt now when zero, and UpdatedAt (always) CreatedAt.
func FillConversation(c *chat.Conversation, sc chat.Scope, now time.Time) {
	if c.ID == "" {
		c.ID = chat.NewID()
	}
	c.Tenant, c.Owner = sc.Tenant, sc.User
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now
	}
	c.UpdatedAt = c.CreatedAt
}

// FillMessage sets m's ID when empty and CreatedAt to now when zero.
func FillMessage(m *chat.Message, now time.Time) {
	if m.ID == "" {
		m.ID = chat.NewID()
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = now
	}
}

// FillRun makes r a new run of sc: ID set when empty, TurnID its own ID
// when empty (a run starts a turn unless it continues one), Status queued
// when empty, CreatedAt now when zero, StartedAt CreatedAt when zero, and
// a fresh TraceID when the caller decided none.
func FillRun(r *chat.Run, sc chat.Scope, now time.Time) {
	r.Tenant, r.Owner = sc.Tenant, sc.User
	if r.ID == "" {
		r.ID = chat.NewID()
	}
	if r.TurnID == "" {
		r.TurnID = r.ID
	}
	if r.Status == "" {
		r.Status = chat.RunQueued
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	if r.StartedAt.IsZero() {
		r.StartedAt = r.CreatedAt
	}
	r.TraceID = cmp.Or(r.TraceID, chat.NewTraceID())
}

// FillConfirmation sets c's ID when empty, Status pending when empty,
// CreatedAt now when zero and Args an empty object when empty (a tool
// called without arguments). Tenant and owner are the run's, set by the
// caller.
func FillConfirmation(c *chat.Confirmation, now time.Time) {
	if c.ID == "" {
		c.ID = chat.NewID()
	}
	if c.Status == "" {
		c.Status = chat.ConfirmPending
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now
	}
	if len(c.Args) == 0 {
		c.Args = json.RawMessage(`{}`)
	}
}

// FillDocument makes d a document uploaded by sc and stored with chunks
// chunks: ID set when empty, CreatedAt now when zero, Collection
// DefaultCollection when empty, Chunks (always) the count.
func FillDocument(d *Document, sc chat.Scope, chunks int, now time.Time) {
	if d.ID == "" {
		d.ID = chat.NewID()
	}
	if d.CreatedAt.IsZero() {
		d.CreatedAt = now
	}
	d.Tenant, d.Owner, d.Chunks = sc.Tenant, sc.User, chunks
	d.Collection = cmp.Or(d.Collection, DefaultCollection)
}

// FillChunk sets c's ID when empty.
func FillChunk(c *Chunk) {
	if c.ID == "" {
		c.ID = chat.NewID()
	}
}

// FillMemoryEntry sets e's CreatedAt to now when zero.
func FillMemoryEntry(e *MemoryEntry, now time.Time) {
	if e.CreatedAt.IsZero() {
		e.CreatedAt = now
	}
}

// FillBlob sets b's ID when empty and CreatedAt (always) to now: a blob is
// created when it is put.
func FillBlob(b *chat.Blob, now time.Time) {
	if b.ID == "" {
		b.ID = chat.NewID()
	}
	b.CreatedAt = now
}

// FillCompaction sets c's ID when empty, and (always) CreatedAt to now and
// Archived to archived, the count of messages it stands for.
func FillCompaction(c *Compaction, archived int, now time.Time) {
	if c.ID == "" {
		c.ID = chat.NewID()
	}
	c.CreatedAt, c.Archived = now, archived
}
