package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentchat/agentchat/internal/agent"
	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/store"
)

// agentRoutes adds the agents API: agents and their versions (admins
// change them, every principal of the tenant reads them), the models a
// tenant may use, and the tenant's settings. Without agents the routes
// answer 404 agents_disabled.
func (s *Server) agentRoutes(api func(string, handlerFunc)) {
	api("POST /v1/agents", s.createAgent)
	api("GET /v1/agents", s.listAgents)
	api("GET /v1/agents/{agentId}", s.getAgent)
	api("PATCH /v1/agents/{agentId}", s.updateAgent)
	api("DELETE /v1/agents/{agentId}", s.archiveAgent)
	api("GET /v1/agents/{agentId}/versions", s.listAgentVersions)
	api("GET /v1/agents/{agentId}/versions/{version}", s.getAgentVersion)
	api("POST /v1/agents/{agentId}/publish", s.publishAgent)
	api("GET /v1/models", s.listModels)
	api("GET /v1/tenant", s.getTenant)
	api("PATCH /v1/tenant", s.updateTenant)
}

func (s *Server) agentService() (*agent.Service, error) {
	if s.agents == nil {
		return nil, apiErr(http.StatusNotFound, errcode.AgentsDisabled, "this server runs without agents")
	}
	return s.agents, nil
}

// adminAgents is the agent service and the caller's scope for a request
// that changes agents or the tenant's settings: admins only.
func (s *Server) adminAgents(r *http.Request) (*agent.Service, chat.Scope, error) {
	svc, err := s.agentService()
	if err != nil {
		return nil, chat.Scope{}, err
	}
	sc := scopeOf(r.Context())
	if !sc.IsAdmin() {
		return nil, chat.Scope{}, agentErr(agent.ErrForbidden)
	}
	return svc, sc, nil
}

func agentErr(err error) error { return toAPIError(err, errcode.AgentNotFound, "agent") }

// agentView is an agent as the API shows it: its published definition's
// fields, then what the server keeps about it.
type agentView struct {
	ID string `json:"id"`
	agent.Spec
	// Version is the published version; LatestVersion the newest (a draft
	// when it is above Version).
	Version       int    `json:"version"`
	LatestVersion int    `json:"latestVersion"`
	BuiltIn       bool   `json:"builtIn,omitempty"`
	CreatedBy     string `json:"createdBy,omitempty"`
	CreatedAt     string `json:"createdAt,omitempty"`
	UpdatedAt     string `json:"updatedAt,omitempty"`
	ArchivedAt    string `json:"archivedAt,omitempty"`
}

func viewAgent(a agent.Agent) agentView {
	v := agentView{ID: a.ID, Spec: a.Spec, Version: a.Version, LatestVersion: a.LatestVersion, BuiltIn: a.BuiltIn, CreatedBy: a.CreatedBy}
	if !a.BuiltIn {
		v.CreatedAt, v.UpdatedAt = dialect.Millis(a.CreatedAt), dialect.Millis(a.UpdatedAt)
	}
	if a.ArchivedAt != nil {
		v.ArchivedAt = dialect.Millis(*a.ArchivedAt)
	}
	return v
}

// versionView is one version: who made it, when, what changed from the
// version before, and the whole definition, so any two diff field by field.
type versionView struct {
	AgentID     string     `json:"agentId"`
	Version     int        `json:"version"`
	Published   bool       `json:"published"`
	PublishedAt string     `json:"publishedAt,omitempty"`
	CreatedBy   string     `json:"createdBy"`
	CreatedAt   string     `json:"createdAt"`
	Changes     []string   `json:"changes"`
	Definition  agent.Spec `json:"definition"`
}

func viewVersion(v agent.Version, published int) versionView {
	out := versionView{AgentID: v.AgentID, Version: v.Version, Published: v.Version == published, CreatedBy: v.CreatedBy,
		CreatedAt: dialect.Millis(v.CreatedAt), Changes: v.Changes, Definition: v.Spec}
	if out.Changes == nil {
		out.Changes = []string{}
	}
	if v.PublishedAt != nil {
		out.PublishedAt = dialect.Millis(*v.PublishedAt)
	}
	return out
}

func (s *Server) createAgent(w http.ResponseWriter, r *http.Request) error {
	svc, sc, err := s.adminAgents(r) // before the body: a member learns nothing from it
	if err != nil {
		return err
	}
	raw, err := readBody(r)
	if err != nil {
		return err
	}
	sp, off, err := agent.DecodeSpec(raw)
	if err != nil {
		return err
	}
	a, err := svc.Create(r.Context(), sc, sp, off)
	if err != nil {
		return agentErr(err)
	}
	w.Header().Set("ETag", agent.ETag(a))
	w.Header().Set("Location", "/v1/agents/"+a.ID)
	writeJSON(w, http.StatusCreated, viewAgent(a))
	return nil
}

// listAgents pages the tenant's agents, newest first (?archived=true lists
// archived ones too), and says which agent a conversation that names none
// is bound to (defaultAgentId: a stored agent's id, or "default").
func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) error {
	svc, err := s.agentService()
	if err != nil {
		return err
	}
	archived, err := boolQuery(r, "archived")
	if err != nil {
		return err
	}
	p, err := page(r)
	if err != nil {
		return err
	}
	ctx, sc := r.Context(), scopeOf(r.Context())
	rows, next, err := svc.List(ctx, sc, archived, p)
	if err != nil {
		return err
	}
	settings, err := svc.Settings(ctx, sc)
	if err != nil {
		return err
	}
	items := make([]agentView, 0, len(rows))
	for _, a := range rows {
		items = append(items, viewAgent(a))
	}
	writeJSON(w, http.StatusOK, pageBody[agentView]{name: "agents", items: items, next: next,
		extra: map[string]any{"defaultAgentId": settings.DefaultAgent}})
	return nil
}

func boolQuery(r *http.Request, name string) (bool, error) {
	switch v := r.URL.Query().Get(name); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, apiErr(http.StatusBadRequest, errcode.InvalidQuery, "%s must be true or false", name)
}

func (s *Server) getAgent(w http.ResponseWriter, r *http.Request) error {
	svc, err := s.agentService()
	if err != nil {
		return err
	}
	a, err := svc.Get(r.Context(), scopeOf(r.Context()), r.PathValue("agentId"))
	if err != nil {
		return agentErr(err)
	}
	if !a.BuiltIn {
		w.Header().Set("ETag", agent.ETag(a))
	}
	writeJSON(w, http.StatusOK, viewAgent(a))
	return nil
}

// updateAgent applies a JSON merge patch of the definition as a new
// version, published unless ?draft=true. If-Match: "<latestVersion>" makes
// the change conditional on nobody having made another version since.
func (s *Server) updateAgent(w http.ResponseWriter, r *http.Request) error {
	svc, sc, err := s.adminAgents(r)
	if err != nil {
		return err
	}
	draft, err := boolQuery(r, "draft")
	if err != nil {
		return err
	}
	ifVersion, err := ifMatchVersion(r)
	if err != nil {
		return err
	}
	raw, err := readBody(r)
	if err != nil {
		return err
	}
	a, err := svc.Update(r.Context(), sc, r.PathValue("agentId"), agent.Update{Patch: raw, Draft: draft, IfVersion: ifVersion})
	if err != nil {
		return agentErr(err)
	}
	w.Header().Set("ETag", agent.ETag(a))
	writeJSON(w, http.StatusOK, viewAgent(a))
	return nil
}

// ifMatchVersion reads If-Match: "<n>" (an ETag this API gave), 0 without one.
func ifMatchVersion(r *http.Request) (int, error) {
	h := strings.TrimSpace(r.Header.Get("If-Match"))
	if h == "" || h == "*" {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.Trim(strings.TrimPrefix(h, "W/"), `"`))
	if err != nil || n < 1 {
		return 0, apiErr(http.StatusPreconditionFailed, errcode.PreconditionFailed, "If-Match must be an ETag of this agent, such as \"3\"")
	}
	return n, nil
}

func (s *Server) archiveAgent(w http.ResponseWriter, r *http.Request) error {
	svc, err := s.agentService()
	if err != nil {
		return err
	}
	a, err := svc.Archive(r.Context(), scopeOf(r.Context()), r.PathValue("agentId"))
	if err != nil {
		return agentErr(err)
	}
	writeJSON(w, http.StatusOK, viewAgent(a))
	return nil
}

func (s *Server) listAgentVersions(w http.ResponseWriter, r *http.Request) error {
	svc, err := s.agentService()
	if err != nil {
		return err
	}
	ctx, sc, id := r.Context(), scopeOf(r.Context()), r.PathValue("agentId")
	a, err := svc.Get(ctx, sc, id)
	if err != nil {
		return agentErr(err)
	}
	list := func(ctx context.Context, sc chat.Scope, p store.Page) ([]agent.Version, string, error) {
		rows, next, err := svc.Versions(ctx, sc, id, p)
		if err != nil {
			return nil, "", agentErr(err)
		}
		return rows, next, nil
	}
	return writePage(w, r, "versions", list, func(v agent.Version) versionView { return viewVersion(v, a.Version) })
}

func (s *Server) getAgentVersion(w http.ResponseWriter, r *http.Request) error {
	svc, err := s.agentService()
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(r.PathValue("version"))
	if err != nil || n < 1 {
		return notFound(errcode.AgentVersionNotFound, "agent version")
	}
	ctx, sc, id := r.Context(), scopeOf(r.Context()), r.PathValue("agentId")
	a, err := svc.Get(ctx, sc, id)
	if err != nil {
		return agentErr(err)
	}
	v, err := svc.Version(ctx, sc, id, n)
	if err != nil {
		return agentErr(err)
	}
	writeJSON(w, http.StatusOK, viewVersion(v, a.Version))
	return nil
}

// publishAgent publishes a version ({"version": n}): from now on every new
// run of the agent is that version's. A rollback is publishing an older one.
func (s *Server) publishAgent(w http.ResponseWriter, r *http.Request) error {
	svc, sc, err := s.adminAgents(r)
	if err != nil {
		return err
	}
	var body struct {
		Version int `json:"version"`
	}
	if err := decodeJSON(r, &body, false); err != nil {
		return err
	}
	if body.Version < 1 {
		return apiErr(http.StatusUnprocessableEntity, errcode.InvalidField, "field \"version\" must be a version number (1 or more)")
	}
	a, err := svc.Publish(r.Context(), sc, r.PathValue("agentId"), body.Version)
	if err != nil {
		return agentErr(err)
	}
	w.Header().Set("ETag", agent.ETag(a))
	writeJSON(w, http.StatusOK, viewAgent(a))
	return nil
}

// modelView is a model as clients may know it: never its URL or key.
type modelView struct {
	Name          string `json:"name"`
	Provider      string `json:"provider"`
	Model         string `json:"model"`
	ContextWindow int    `json:"contextWindow,omitempty"`
}

// listModels lists the models the tenant may use.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) error {
	if s.models == nil {
		return apiErr(http.StatusNotFound, errcode.AgentsDisabled, "this server runs without agents")
	}
	out := []modelView{}
	for _, m := range s.models.List(scopeOf(r.Context()).Tenant) {
		out = append(out, modelView{m.Name, m.Provider, m.Model, m.ContextWindow})
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": out})
	return nil
}

// tenantView is the tenant's settings.
type tenantView struct {
	Tenant string `json:"tenant"`
	// DefaultAgentID is the agent of conversations that name none: a
	// stored agent's id, or "default" for the built-in one.
	DefaultAgentID string `json:"defaultAgentId"`
	UpdatedBy      string `json:"updatedBy,omitempty"`
	UpdatedAt      string `json:"updatedAt,omitempty"`
}

func viewTenant(t agent.Settings) tenantView {
	v := tenantView{Tenant: t.Tenant, DefaultAgentID: t.DefaultAgent, UpdatedBy: t.UpdatedBy}
	if !t.UpdatedAt.IsZero() {
		v.UpdatedAt = dialect.Millis(t.UpdatedAt)
	}
	return v
}

func (s *Server) getTenant(w http.ResponseWriter, r *http.Request) error {
	svc, err := s.agentService()
	if err != nil {
		return err
	}
	t, err := svc.Settings(r.Context(), scopeOf(r.Context()))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewTenant(t))
	return nil
}

// updateTenant changes the tenant's settings: {"defaultAgentId": id}
// ("default" or null for the built-in agent). Admins only.
func (s *Server) updateTenant(w http.ResponseWriter, r *http.Request) error {
	svc, sc, err := s.adminAgents(r)
	if err != nil {
		return err
	}
	var body struct {
		// A RawMessage sees null (UnmarshalJSON is called with it), so an
		// absent field and null differ.
		DefaultAgentID json.RawMessage `json:"defaultAgentId"`
	}
	if err := decodeJSON(r, &body, false); err != nil {
		return err
	}
	if body.DefaultAgentID == nil {
		return apiErr(http.StatusUnprocessableEntity, errcode.MissingField, "field \"defaultAgentId\" is required (null for the built-in agent)")
	}
	var id *string
	if err := json.Unmarshal(body.DefaultAgentID, &id); err != nil {
		return apiErr(http.StatusUnprocessableEntity, errcode.InvalidField, "field \"defaultAgentId\" must be an agent id or null")
	}
	t, err := svc.SetDefault(r.Context(), sc, deref(id))
	if err != nil {
		return agentErr(err)
	}
	writeJSON(w, http.StatusOK, viewTenant(t))
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
