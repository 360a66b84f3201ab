package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// agentCols reads an agent with its published version's definition
// (agents a joined with agent_versions v on the published version).
const agentCols = `a.id, a.tenant, a.created_by, a.version, a.latest_version, a.created_at, a.updated_at, a.archived_at, v.spec`

const agentFrom = ` FROM agents a JOIN agent_versions v ON v.agent_id = a.id AND v.version = a.version`

func scanAgent(row pgx.Row) (store.Agent, error) {
	var a store.Agent
	var spec []byte
	err := row.Scan(&a.ID, &a.Tenant, &a.CreatedBy, &a.Version, &a.LatestVersion, &a.CreatedAt, &a.UpdatedAt, &a.ArchivedAt, &spec)
	a.CreatedAt, a.UpdatedAt, a.ArchivedAt, a.Spec = a.CreatedAt.UTC(), a.UpdatedAt.UTC(), utc(a.ArchivedAt), json.RawMessage(spec)
	return a, err
}

const versionCols = `agent_id, version, spec, changes, created_by, created_at, published_at`

func scanVersion(row pgx.Row) (store.AgentVersion, error) {
	var v store.AgentVersion
	var spec, changes []byte
	if err := row.Scan(&v.AgentID, &v.Version, &spec, &changes, &v.CreatedBy, &v.CreatedAt, &v.PublishedAt); err != nil {
		return v, err
	}
	v.Spec, v.CreatedAt, v.PublishedAt = json.RawMessage(spec), v.CreatedAt.UTC(), utc(v.PublishedAt)
	return v, json.Unmarshal(changes, &v.Changes)
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// changesJSON stores a version's change list, never null.
func changesJSON(c []string) []byte {
	if c == nil {
		c = []string{}
	}
	b, _ := json.Marshal(c)
	return b
}

// CreateAgent stores an agent with its first version, published, in one transaction.
func (s *Store) CreateAgent(ctx context.Context, sc chat.Scope, a store.Agent, v store.AgentVersion) (store.Agent, store.AgentVersion, error) {
	store.FillAgent(&a, sc, now())
	a.CreatedAt = ms(a.CreatedAt)
	a.UpdatedAt = a.CreatedAt
	v.AgentID, v.Version, v.CreatedBy, v.CreatedAt, v.PublishedAt = a.ID, 1, sc.User, a.CreatedAt, &a.CreatedAt
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO agents (id, tenant, created_by, version, latest_version, created_at, updated_at) VALUES ($1, $2, $3, 1, 1, $4, $4)`,
			a.ID, a.Tenant, a.CreatedBy, a.CreatedAt)
		b.Queue(`INSERT INTO agent_versions (`+versionCols+`, tenant) VALUES ($1, 1, $2, $3, $4, $5, $5, $6)`,
			a.ID, []byte(v.Spec), changesJSON(v.Changes), v.CreatedBy, v.CreatedAt, a.Tenant)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return store.Agent{}, store.AgentVersion{}, fmt.Errorf("create agent: %w", interpretError(err))
	}
	a.Spec = v.Spec
	return a, v, nil
}

// GetAgent reads an agent of sc's tenant.
func (s *Store) GetAgent(ctx context.Context, sc chat.Scope, id string) (store.Agent, error) {
	a, err := scanAgent(s.pool.QueryRow(ctx, `SELECT `+agentCols+agentFrom+` WHERE a.id = $1 AND a.tenant = $2`, id, sc.Tenant))
	if err != nil {
		return store.Agent{}, fmt.Errorf("get agent %s: %w", id, interpretError(err))
	}
	return a, nil
}

// ListAgents pages the tenant's agents, newest first.
func (s *Store) ListAgents(ctx context.Context, sc chat.Scope, f store.AgentFilter, p store.Page) ([]store.Agent, string, error) {
	// keysetPage orders by bare column names: the subquery gives the
	// agent's own created_at and id those names.
	q := `SELECT * FROM (SELECT ` + agentCols + `, a.created_at AS at` + agentFrom + ` WHERE a.tenant = $1`
	if !f.Archived {
		q += ` AND a.archived_at IS NULL`
	}
	q += `) l WHERE true`
	return keysetPage(q, []any{sc.Tenant}, "at", true, p, func(a store.Agent) store.Cursor { return store.Cursor{At: a.CreatedAt, ID: a.ID} },
		func(q string, args []any) ([]store.Agent, error) {
			rows, _ := s.pool.Query(ctx, q, args...)
			out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Agent, error) {
				var at time.Time
				return scanAgent(scanPrefix{row, &at})
			})
			if err != nil {
				return nil, fmt.Errorf("list agents: %w", interpretError(err))
			}
			return out, nil
		})
}

// scanPrefix scans a row whose last columns are extra: they go to rest.
type scanPrefix struct {
	row  pgx.Row
	rest any
}

func (p scanPrefix) Scan(dest ...any) error { return p.row.Scan(append(dest, p.rest)...) }

// AddAgentVersion stores the next version of an agent. The agent's row is
// locked first, so of two writers building on one version exactly one wins.
func (s *Store) AddAgentVersion(ctx context.Context, sc chat.Scope, nv store.NewAgentVersion) (store.Agent, store.AgentVersion, error) {
	at := now()
	v := store.AgentVersion{AgentID: nv.AgentID, Version: nv.Base + 1, Spec: nv.Spec, Changes: nv.Changes, CreatedBy: sc.User, CreatedAt: at}
	if v.Changes == nil {
		v.Changes = []string{}
	}
	if nv.Publish {
		v.PublishedAt = &at
	}
	var a store.Agent
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockWritable(ctx, tx, sc, nv.AgentID, func(latest int) error {
			if latest != nv.Base {
				return fmt.Errorf("%w: the agent's latest version is %d, not %d", store.ErrConflict, latest, nv.Base)
			}
			return nil
		}); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO agent_versions (`+versionCols+`, tenant) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			v.AgentID, v.Version, []byte(v.Spec), changesJSON(v.Changes), v.CreatedBy, at, v.PublishedAt, sc.Tenant); err != nil {
			return err
		}
		var err error
		a, err = scanAgent(tx.QueryRow(ctx, `WITH u AS (
				UPDATE agents SET latest_version = $2, updated_at = GREATEST(updated_at, $3),
					version = CASE WHEN $4 THEN $2 ELSE version END
				WHERE id = $1 RETURNING *
			)
			SELECT `+agentCols+` FROM u a JOIN agent_versions v ON v.agent_id = a.id AND v.version = a.version`,
			nv.AgentID, v.Version, at, nv.Publish))
		return err
	})
	if err != nil {
		return store.Agent{}, store.AgentVersion{}, fmt.Errorf("add version of agent %s: %w", nv.AgentID, interpretError(err))
	}
	return a, v, nil
}

// lockWritable locks the agent's row and reads its latest version for
// check, refusing an archived agent and one of another tenant.
func lockWritable(ctx context.Context, tx pgx.Tx, sc chat.Scope, id string, check func(latest int) error) error {
	var latest int
	var archived *time.Time
	if err := tx.QueryRow(ctx, `SELECT latest_version, archived_at FROM agents WHERE id = $1 AND tenant = $2 FOR UPDATE`, id, sc.Tenant).
		Scan(&latest, &archived); err != nil {
		return err
	}
	if archived != nil {
		return store.ErrArchived
	}
	return check(latest)
}

// GetAgentVersion reads one version of an agent of sc's tenant.
func (s *Store) GetAgentVersion(ctx context.Context, sc chat.Scope, agentID string, version int) (store.AgentVersion, error) {
	v, err := scanVersion(s.pool.QueryRow(ctx, `SELECT `+versionCols+` FROM agent_versions WHERE agent_id = $1 AND version = $2 AND tenant = $3`,
		agentID, version, sc.Tenant))
	if err != nil {
		return store.AgentVersion{}, fmt.Errorf("get version %d of agent %s: %w", version, agentID, interpretError(err))
	}
	return v, nil
}

// ListAgentVersions pages an agent's versions, newest first.
func (s *Store) ListAgentVersions(ctx context.Context, sc chat.Scope, agentID string, p store.Page) ([]store.AgentVersion, string, error) {
	below, ok, err := store.DecodeVersionCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	if _, err := s.GetAgent(ctx, sc, agentID); err != nil {
		return nil, "", err
	}
	if !ok {
		below = int(^uint32(0) >> 1)
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+versionCols+` FROM agent_versions WHERE agent_id = $1 AND tenant = $2 AND version < $3
		ORDER BY version DESC LIMIT $4`, agentID, sc.Tenant, below, p.Limit+1)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.AgentVersion, error) { return scanVersion(row) })
	if err != nil {
		return nil, "", fmt.Errorf("list versions of agent %s: %w", agentID, interpretError(err))
	}
	if len(out) <= p.Limit {
		return out, "", nil
	}
	out = out[:p.Limit]
	return out, store.VersionCursor(out[len(out)-1].Version), nil
}

// PublishAgentVersion makes a version the published one.
func (s *Store) PublishAgentVersion(ctx context.Context, sc chat.Scope, agentID string, version int) (store.Agent, error) {
	at := now()
	var a store.Agent
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockWritable(ctx, tx, sc, agentID, func(int) error { return nil }); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE agent_versions SET published_at = COALESCE(published_at, $3) WHERE agent_id = $1 AND version = $2`,
			agentID, version, at)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrNotFound
		}
		if _, err := tx.Exec(ctx, `UPDATE agents SET version = $2, updated_at = GREATEST(updated_at, $3) WHERE id = $1 AND version <> $2`,
			agentID, version, at); err != nil {
			return err
		}
		a, err = scanAgent(tx.QueryRow(ctx, `SELECT `+agentCols+agentFrom+` WHERE a.id = $1`, agentID))
		return err
	})
	if err != nil {
		return store.Agent{}, fmt.Errorf("publish version %d of agent %s: %w", version, agentID, interpretError(err))
	}
	return a, nil
}

// ArchiveAgent archives an agent, once.
func (s *Store) ArchiveAgent(ctx context.Context, sc chat.Scope, agentID string) (store.Agent, error) {
	a, err := scanAgent(s.pool.QueryRow(ctx, `WITH u AS (
			UPDATE agents SET archived_at = COALESCE(archived_at, $3),
				updated_at = CASE WHEN archived_at IS NULL THEN GREATEST(updated_at, $3) ELSE updated_at END
			WHERE id = $1 AND tenant = $2 RETURNING *
		)
		SELECT `+agentCols+` FROM u a JOIN agent_versions v ON v.agent_id = a.id AND v.version = a.version`, agentID, sc.Tenant, now()))
	if err != nil {
		return store.Agent{}, fmt.Errorf("archive agent %s: %w", agentID, interpretError(err))
	}
	return a, nil
}

// TenantSettings reads a tenant's settings, the zero value when it has none.
func (s *Store) TenantSettings(ctx context.Context, tenant string) (store.TenantSettings, error) {
	t := store.TenantSettings{Tenant: tenant}
	err := s.pool.QueryRow(ctx, `SELECT default_agent_id, updated_by, updated_at FROM tenant_settings WHERE tenant = $1`, tenant).
		Scan(&t.DefaultAgentID, &t.UpdatedBy, &t.UpdatedAt)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return t, nil
	case err != nil:
		return store.TenantSettings{}, fmt.Errorf("tenant settings: %w", interpretError(err))
	}
	t.UpdatedAt = t.UpdatedAt.UTC()
	return t, nil
}

// SetTenantSettings stores a tenant's settings.
func (s *Store) SetTenantSettings(ctx context.Context, sc chat.Scope, t store.TenantSettings) (store.TenantSettings, error) {
	t.Tenant, t.UpdatedBy, t.UpdatedAt = sc.Tenant, sc.User, now()
	_, err := s.pool.Exec(ctx, `INSERT INTO tenant_settings (tenant, default_agent_id, updated_by, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (tenant) DO UPDATE SET default_agent_id = excluded.default_agent_id, updated_by = excluded.updated_by, updated_at = excluded.updated_at`,
		t.Tenant, t.DefaultAgentID, t.UpdatedBy, t.UpdatedAt)
	if err != nil {
		return store.TenantSettings{}, fmt.Errorf("set tenant settings: %w", interpretError(err))
	}
	return t, nil
}
