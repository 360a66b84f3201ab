package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// agentCols reads an agent with its published version's definition
// (agents a joined with agent_versions v on the published version).
const agentCols = `a.id, a.tenant, a.created_by, a.version, a.latest_version, a.created_at, a.updated_at, a.archived_at, v.spec`

const agentFrom = ` FROM agents a JOIN agent_versions v ON v.agent_id = a.id AND v.version = a.version`

func scanAgent(row scanner) (store.Agent, error) {
	var a store.Agent
	var created, updated int64
	var archived sql.NullInt64
	var spec string
	err := row.Scan(&a.ID, &a.Tenant, &a.CreatedBy, &a.Version, &a.LatestVersion, &created, &updated, &archived, &spec)
	a.CreatedAt, a.UpdatedAt, a.ArchivedAt, a.Spec = fromMS(created), fromMS(updated), optTime(archived), json.RawMessage(spec)
	return a, err
}

const versionCols = `agent_id, version, spec, changes, created_by, created_at, published_at`

func scanVersion(row scanner) (store.AgentVersion, error) {
	var v store.AgentVersion
	var spec, changes string
	var created int64
	var published sql.NullInt64
	if err := row.Scan(&v.AgentID, &v.Version, &spec, &changes, &v.CreatedBy, &created, &published); err != nil {
		return v, err
	}
	v.Spec, v.CreatedAt, v.PublishedAt = json.RawMessage(spec), fromMS(created), optTime(published)
	return v, json.Unmarshal([]byte(changes), &v.Changes)
}

func optTime(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMS(v.Int64)
	return &t
}

// changesJSON stores a version's change list, never null.
func changesJSON(c []string) string {
	if c == nil {
		c = []string{}
	}
	b, _ := json.Marshal(c)
	return string(b)
}

// CreateAgent stores an agent with its first version, published.
func (s *Store) CreateAgent(ctx context.Context, sc chat.Scope, a store.Agent, v store.AgentVersion) (store.Agent, store.AgentVersion, error) {
	store.FillAgent(&a, sc, now())
	a.CreatedAt = a.CreatedAt.UTC().Truncate(time.Millisecond)
	a.UpdatedAt = a.CreatedAt
	v.AgentID, v.Version, v.CreatedBy, v.CreatedAt, v.PublishedAt = a.ID, 1, sc.User, a.CreatedAt, &a.CreatedAt
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO agents (id, tenant, created_by, version, latest_version, created_at, updated_at) VALUES (?, ?, ?, 1, 1, ?, ?)`,
			a.ID, a.Tenant, a.CreatedBy, ms(a.CreatedAt), ms(a.UpdatedAt)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO agent_versions (`+versionCols+`, tenant) VALUES (?, 1, ?, ?, ?, ?, ?, ?)`,
			a.ID, string(v.Spec), changesJSON(v.Changes), v.CreatedBy, ms(v.CreatedAt), ms(v.CreatedAt), a.Tenant)
		return err
	})
	if err != nil {
		return store.Agent{}, store.AgentVersion{}, fmt.Errorf("create agent: %w", err)
	}
	a.Spec = v.Spec
	return a, v, nil
}

// GetAgent reads an agent of sc's tenant.
func (s *Store) GetAgent(ctx context.Context, sc chat.Scope, id string) (store.Agent, error) {
	a, err := scanAgent(s.read.QueryRowContext(ctx, `SELECT `+agentCols+agentFrom+` WHERE a.id = ? AND a.tenant = ?`, id, sc.Tenant))
	if err != nil {
		return store.Agent{}, fmt.Errorf("get agent %s: %w", id, interpret(err))
	}
	return a, nil
}

// ListAgents pages the tenant's agents, newest first.
func (s *Store) ListAgents(ctx context.Context, sc chat.Scope, f store.AgentFilter, p store.Page) ([]store.Agent, string, error) {
	// keysetPage orders by the bare column names, which the select's own
	// aliases (a.created_at AS created_at, a.id AS id) make unambiguous.
	q := `SELECT * FROM (SELECT ` + agentCols + `, a.created_at AS at` + agentFrom + ` WHERE a.tenant = ?`
	if !f.Archived {
		q += ` AND a.archived_at IS NULL`
	}
	q += `) WHERE 1 = 1`
	return keysetPage(q, []any{sc.Tenant}, "at", true, p, func(a store.Agent) store.Cursor { return store.Cursor{At: a.CreatedAt, ID: a.ID} },
		func(q string, args []any) ([]store.Agent, error) {
			out, err := collect(func(row scanner) (store.Agent, error) {
				var at int64
				a, err := scanAgent(scanPrefix{row, &at})
				return a, err
			})(s.read.QueryContext(ctx, q, args...))
			if err != nil {
				return nil, fmt.Errorf("list agents: %w", err)
			}
			return out, nil
		})
}

// scanPrefix scans a row whose last columns are extra: they go to rest.
type scanPrefix struct {
	row  scanner
	rest any
}

func (p scanPrefix) Scan(dest ...any) error { return p.row.Scan(append(dest, p.rest)...) }

// AddAgentVersion stores the next version of an agent.
func (s *Store) AddAgentVersion(ctx context.Context, sc chat.Scope, nv store.NewAgentVersion) (store.Agent, store.AgentVersion, error) {
	at := now()
	v := store.AgentVersion{AgentID: nv.AgentID, Version: nv.Base + 1, Spec: nv.Spec, Changes: nv.Changes, CreatedBy: sc.User, CreatedAt: at}
	if v.Changes == nil {
		v.Changes = []string{}
	}
	var a store.Agent
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := checkWritable(ctx, tx, sc, nv.AgentID, func(latest int) error {
			if latest != nv.Base {
				return fmt.Errorf("%w: the agent's latest version is %d, not %d", store.ErrConflict, latest, nv.Base)
			}
			return nil
		}); err != nil {
			return err
		}
		var published any
		if nv.Publish {
			published, v.PublishedAt = ms(at), &at
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO agent_versions (`+versionCols+`, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			v.AgentID, v.Version, string(v.Spec), changesJSON(v.Changes), v.CreatedBy, ms(at), published, sc.Tenant); err != nil {
			return err
		}
		q := `UPDATE agents SET latest_version = ?, updated_at = max(updated_at, ?)`
		if nv.Publish {
			q += `, version = latest_version + 1`
		}
		if _, err := tx.ExecContext(ctx, q+` WHERE id = ?`, v.Version, ms(at), nv.AgentID); err != nil {
			return err
		}
		var err error
		a, err = scanAgent(tx.QueryRowContext(ctx, `SELECT `+agentCols+agentFrom+` WHERE a.id = ?`, nv.AgentID))
		return err
	})
	if err != nil {
		return store.Agent{}, store.AgentVersion{}, fmt.Errorf("add version of agent %s: %w", nv.AgentID, err)
	}
	return a, v, nil
}

// checkWritable reads the agent's latest version for check, refusing an
// archived agent and one of another tenant.
func checkWritable(ctx context.Context, tx *sql.Tx, sc chat.Scope, id string, check func(latest int) error) error {
	var latest int
	var archived sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT latest_version, archived_at FROM agents WHERE id = ? AND tenant = ?`, id, sc.Tenant).Scan(&latest, &archived); err != nil {
		return err
	}
	if archived.Valid {
		return store.ErrArchived
	}
	return check(latest)
}

// GetAgentVersion reads one version of an agent of sc's tenant.
func (s *Store) GetAgentVersion(ctx context.Context, sc chat.Scope, agentID string, version int) (store.AgentVersion, error) {
	v, err := scanVersion(s.read.QueryRowContext(ctx, `SELECT `+versionCols+` FROM agent_versions WHERE agent_id = ? AND version = ? AND tenant = ?`,
		agentID, version, sc.Tenant))
	if err != nil {
		return store.AgentVersion{}, fmt.Errorf("get version %d of agent %s: %w", version, agentID, interpret(err))
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
	q, args := `SELECT `+versionCols+` FROM agent_versions WHERE agent_id = ? AND tenant = ?`, []any{agentID, sc.Tenant}
	if ok {
		q += ` AND version < ?`
		args = append(args, below)
	}
	out, err := collect(scanVersion)(s.read.QueryContext(ctx, q+` ORDER BY version DESC LIMIT ?`, append(args, p.Limit+1)...))
	if err != nil {
		return nil, "", fmt.Errorf("list versions of agent %s: %w", agentID, err)
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
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := checkWritable(ctx, tx, sc, agentID, func(int) error { return nil }); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE agent_versions SET published_at = coalesce(published_at, ?) WHERE agent_id = ? AND version = ?`,
			ms(at), agentID, version)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.ErrNotFound
		}
		if _, err := tx.ExecContext(ctx, `UPDATE agents SET version = ?, updated_at = max(updated_at, ?) WHERE id = ? AND version <> ?`,
			version, ms(at), agentID, version); err != nil {
			return err
		}
		a, err = scanAgent(tx.QueryRowContext(ctx, `SELECT `+agentCols+agentFrom+` WHERE a.id = ?`, agentID))
		return err
	})
	if err != nil {
		return store.Agent{}, fmt.Errorf("publish version %d of agent %s: %w", version, agentID, err)
	}
	return a, nil
}

// ArchiveAgent archives an agent, once.
func (s *Store) ArchiveAgent(ctx context.Context, sc chat.Scope, agentID string) (store.Agent, error) {
	at := now()
	var a store.Agent
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE agents SET archived_at = coalesce(archived_at, ?), updated_at = CASE WHEN archived_at IS NULL THEN max(updated_at, ?) ELSE updated_at END
			WHERE id = ? AND tenant = ?`, ms(at), ms(at), agentID, sc.Tenant)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.ErrNotFound
		}
		a, err = scanAgent(tx.QueryRowContext(ctx, `SELECT `+agentCols+agentFrom+` WHERE a.id = ?`, agentID))
		return err
	})
	if err != nil {
		return store.Agent{}, fmt.Errorf("archive agent %s: %w", agentID, err)
	}
	return a, nil
}

// TenantSettings reads a tenant's settings, the zero value when it has none.
func (s *Store) TenantSettings(ctx context.Context, tenant string) (store.TenantSettings, error) {
	t := store.TenantSettings{Tenant: tenant}
	var updated int64
	err := s.read.QueryRowContext(ctx, `SELECT default_agent_id, updated_by, updated_at FROM tenant_settings WHERE tenant = ?`, tenant).
		Scan(&t.DefaultAgentID, &t.UpdatedBy, &updated)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return t, nil
	case err != nil:
		return store.TenantSettings{}, fmt.Errorf("tenant settings: %w", interpret(err))
	}
	t.UpdatedAt = fromMS(updated)
	return t, nil
}

// SetTenantSettings stores a tenant's settings.
func (s *Store) SetTenantSettings(ctx context.Context, sc chat.Scope, t store.TenantSettings) (store.TenantSettings, error) {
	t.Tenant, t.UpdatedBy, t.UpdatedAt = sc.Tenant, sc.User, now()
	_, err := s.write.ExecContext(ctx, `INSERT INTO tenant_settings (tenant, default_agent_id, updated_by, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (tenant) DO UPDATE SET default_agent_id = excluded.default_agent_id, updated_by = excluded.updated_by, updated_at = excluded.updated_at`,
		t.Tenant, t.DefaultAgentID, t.UpdatedBy, ms(t.UpdatedAt))
	if err != nil {
		return store.TenantSettings{}, fmt.Errorf("set tenant settings: %w", interpret(err))
	}
	return t, nil
}
