package store

import (
	"context"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
)

// File is an uploaded file's record: who owns it and what it is. Its bytes
// are in file.Storage under SHA256 (the content address), which several
// records may share.
type File struct {
	ID     string
	Tenant string
	Owner  string
	// Name is the client's file name, cleaned (no directories).
	Name string
	// MediaType is what the server sniffed from the bytes, never the client's claim.
	MediaType string
	Size      int64
	SHA256    string
	CreatedAt time.Time
	// ReferencedAt is when a message first referenced the file; nil while
	// none has (an upload not yet sent).
	ReferencedAt *time.Time
}

// Files are the records of uploaded files. A file belongs to a user in a
// tenant: every read and write is scoped to sc's tenant and user, and
// another principal's file is ErrNotFound.
type Files interface {
	// CreateFile stores a file's record; ID and CreatedAt are set when empty.
	CreateFile(ctx context.Context, sc chat.Scope, f File) (File, error)
	GetFile(ctx context.Context, sc chat.Scope, id string) (File, error)
	// ListFiles pages the principal's files, newest first.
	ListFiles(ctx context.Context, sc chat.Scope, p Page) ([]File, string, error)
	// DeleteFile removes the record and returns it.
	DeleteFile(ctx context.Context, sc chat.Scope, id string) (File, error)
	// TenantFileBytes is the total size of the tenant's files (its quota's use).
	TenantFileBytes(ctx context.Context, tenant string) (int64, error)
	// ReferenceFiles records that a message of conversationID references
	// the files ids (all sc's, else ErrNotFound and nothing is recorded),
	// setting their ReferencedAt when unset. Deleting the conversation
	// drops its references.
	ReferenceFiles(ctx context.Context, sc chat.Scope, conversationID string, ids []string) error
	// SweepFiles deletes, across tenants, up to limit files that no
	// conversation references: those once referenced (their conversations
	// were deleted) and those never referenced created before
	// unreferencedBefore (uploads never sent). It returns the deleted records.
	// A file another sweep is deleting meanwhile is waited for, not passed
	// over: a caller that deleted a conversation and then swept finds the
	// files only it referenced gone, whichever sweep took them.
	SweepFiles(ctx context.Context, unreferencedBefore time.Time, limit int) ([]File, error)
	// FileContentInUse reports whether any file record has the content address sha256.
	FileContentInUse(ctx context.Context, sha256 string) (bool, error)
}

// FillFile sets a new file's id, owner and time when empty.
func FillFile(f *File, sc chat.Scope, at time.Time) {
	if f.ID == "" {
		f.ID = chat.NewID()
	}
	f.Tenant, f.Owner = sc.Tenant, sc.User
	if f.CreatedAt.IsZero() {
		f.CreatedAt = at
	}
	f.CreatedAt = f.CreatedAt.UTC().Truncate(time.Millisecond)
}
