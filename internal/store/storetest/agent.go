package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// The contract of store.Agents: agents are tenant-wide (every user of the
// tenant reads them, another tenant finds none), versions are immutable
// and numbered from 1, the published pointer moves only by publishing or
// a version published on creation, and concurrent writers building on one
// version cannot both win.

var root = chat.Scope{Tenant: "acme", User: "root", Role: chat.Admin}

func spec(name string) json.RawMessage {
	// Deliberately spaced: the store keeps a definition byte for byte.
	return json.RawMessage(fmt.Sprintf(`{"name": %q, "model": "default"}`, name))
}

func newAgent(t *testing.T, s store.Store, sc chat.Scope, name string) store.Agent {
	t.Helper()
	a, v := must2(t)(s.CreateAgent(ctx(t), sc, store.Agent{}, store.AgentVersion{Spec: spec(name)}))
	if v.Version != 1 || v.PublishedAt == nil || v.CreatedBy != sc.User || v.AgentID != a.ID {
		t.Fatalf("first version %+v", v)
	}
	return a
}

func must2(t *testing.T) func(store.Agent, store.AgentVersion, error) (store.Agent, store.AgentVersion) {
	return func(a store.Agent, v store.AgentVersion, err error) (store.Agent, store.AgentVersion) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a, v
	}
}

func testAgentCreateAndRead(t *testing.T, s store.Store) {
	a := newAgent(t, s, root, "Support")
	if a.ID == "" || a.Tenant != "acme" || a.CreatedBy != "root" || a.Version != 1 || a.LatestVersion != 1 ||
		a.CreatedAt.IsZero() || !a.UpdatedAt.Equal(a.CreatedAt) || a.ArchivedAt != nil || string(a.Spec) != string(spec("Support")) {
		t.Fatalf("created %+v", a)
	}
	for _, sc := range []chat.Scope{root, alice, bob} { // tenant-wide, whatever the role
		got := must[store.Agent](t)(s.GetAgent(ctx(t), sc, a.ID))
		if got.ID != a.ID || string(got.Spec) != string(spec("Support")) || !got.CreatedAt.Equal(a.CreatedAt) {
			t.Fatalf("%s reads %+v", sc.User, got)
		}
	}
	_, err := s.GetAgent(ctx(t), eve, a.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetAgentVersion(ctx(t), eve, a.ID, 1)
	wantErr(t, err, store.ErrNotFound)
	_, _, err = s.ListAgentVersions(ctx(t), eve, a.ID, store.Page{Limit: 10})
	wantErr(t, err, store.ErrNotFound)
	_, _, err = s.AddAgentVersion(ctx(t), eve, store.NewAgentVersion{AgentID: a.ID, Base: 1, Spec: spec("x")})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.PublishAgentVersion(ctx(t), eve, a.ID, 1)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.ArchiveAgent(ctx(t), eve, a.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetAgent(ctx(t), root, "no-such-agent")
	wantErr(t, err, store.ErrNotFound)
}

func testAgentPaging(t *testing.T, s store.Store) {
	var made []string
	for i := range 5 {
		made = append(made, newAgent(t, s, root, fmt.Sprintf("agent %d", i)).ID)
	}
	newAgent(t, s, chat.Scope{Tenant: "evil", User: "mallory"}, "theirs")
	must[store.Agent](t)(s.ArchiveAgent(ctx(t), root, made[2]))
	list := func(f store.AgentFilter) []string {
		var ids []string
		cursor := ""
		for range 10 {
			page, next := mustPage[store.Agent](t)(s.ListAgents(ctx(t), bob, f, store.Page{Limit: 2, Cursor: cursor}))
			for _, a := range page {
				if a.Tenant != "acme" || len(a.Spec) == 0 {
					t.Fatalf("listed %+v", a)
				}
				ids = append(ids, a.ID)
			}
			if next == "" {
				return ids
			}
			cursor = next
		}
		t.Fatal("paging does not end")
		return nil
	}
	want := slices.Clone(made)
	slices.Reverse(want) // newest first
	if got := list(store.AgentFilter{Archived: true}); !slices.Equal(got, want) {
		t.Fatalf("with archived: %v, want %v", got, want)
	}
	want = slices.DeleteFunc(want, func(id string) bool { return id == made[2] })
	if got := list(store.AgentFilter{}); !slices.Equal(got, want) {
		t.Fatalf("without archived: %v, want %v", got, want)
	}
	_, _, err := s.ListAgents(ctx(t), root, store.AgentFilter{}, store.Page{Limit: 2, Cursor: "nope"})
	wantErr(t, err, store.ErrBadCursor)
}

func testAgentVersions(t *testing.T, s store.Store) {
	a := newAgent(t, s, root, "v1")
	// A draft: latest moves, the published version does not.
	a2, v2 := must2(t)(s.AddAgentVersion(ctx(t), root, store.NewAgentVersion{AgentID: a.ID, Base: 1, Spec: spec("v2"), Changes: []string{"name"}}))
	if v2.Version != 2 || v2.PublishedAt != nil || v2.CreatedBy != "root" || !slices.Equal(v2.Changes, []string{"name"}) {
		t.Fatalf("draft %+v", v2)
	}
	if a2.Version != 1 || a2.LatestVersion != 2 || string(a2.Spec) != string(spec("v1")) || a2.UpdatedAt.Before(a.UpdatedAt) {
		t.Fatalf("after a draft %+v", a2)
	}
	// Building on a version that is no longer the latest is a conflict, and stores nothing.
	_, _, err := s.AddAgentVersion(ctx(t), root, store.NewAgentVersion{AgentID: a.ID, Base: 1, Spec: spec("stale"), Publish: true})
	wantErr(t, err, store.ErrConflict)
	if errors.Is(err, store.ErrArchived) {
		t.Fatalf("a stale write reads as archived: %v", err)
	}
	// Published at once.
	a3, v3 := must2(t)(s.AddAgentVersion(ctx(t), root, store.NewAgentVersion{AgentID: a.ID, Base: 2, Spec: spec("v3"), Publish: true}))
	if v3.Version != 3 || v3.PublishedAt == nil || v3.Changes == nil || len(v3.Changes) != 0 {
		t.Fatalf("published version %+v", v3)
	}
	if a3.Version != 3 || a3.LatestVersion != 3 || string(a3.Spec) != string(spec("v3")) {
		t.Fatalf("after publishing %+v", a3)
	}
	got := must[store.AgentVersion](t)(s.GetAgentVersion(ctx(t), alice, a.ID, 2))
	if string(got.Spec) != string(spec("v2")) || got.PublishedAt != nil || !slices.Equal(got.Changes, []string{"name"}) || !got.CreatedAt.Equal(v2.CreatedAt) {
		t.Fatalf("version 2 reads %+v", got)
	}
	_, err = s.GetAgentVersion(ctx(t), root, a.ID, 4)
	wantErr(t, err, store.ErrNotFound)
	// Newest first, paged.
	var seen []int
	cursor := ""
	for range 5 {
		page, next := mustPage[store.AgentVersion](t)(s.ListAgentVersions(ctx(t), bob, a.ID, store.Page{Limit: 2, Cursor: cursor}))
		for _, v := range page {
			seen = append(seen, v.Version)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if !slices.Equal(seen, []int{3, 2, 1}) {
		t.Fatalf("versions listed %v", seen)
	}
	_, _, err = s.ListAgentVersions(ctx(t), root, a.ID, store.Page{Limit: 2, Cursor: "bm9wZQ"})
	wantErr(t, err, store.ErrBadCursor)
}

func testAgentPublishAndArchive(t *testing.T, s store.Store) {
	a := newAgent(t, s, root, "v1")
	must2(t)(s.AddAgentVersion(ctx(t), root, store.NewAgentVersion{AgentID: a.ID, Base: 1, Spec: spec("v2"), Publish: true}))
	must2(t)(s.AddAgentVersion(ctx(t), root, store.NewAgentVersion{AgentID: a.ID, Base: 2, Spec: spec("v3")}))
	// A rollback: publishing an older version.
	back := must[store.Agent](t)(s.PublishAgentVersion(ctx(t), root, a.ID, 1))
	if back.Version != 1 || back.LatestVersion != 3 || string(back.Spec) != string(spec("v1")) {
		t.Fatalf("rolled back %+v", back)
	}
	v1 := must[store.AgentVersion](t)(s.GetAgentVersion(ctx(t), root, a.ID, 1))
	if v1.PublishedAt == nil || !v1.PublishedAt.Equal(a.CreatedAt) {
		t.Fatalf("republishing moved version 1's first publication: %+v", v1)
	}
	// Publishing the draft sets its first publication once.
	pub := must[store.Agent](t)(s.PublishAgentVersion(ctx(t), root, a.ID, 3))
	v3 := must[store.AgentVersion](t)(s.GetAgentVersion(ctx(t), root, a.ID, 3))
	if pub.Version != 3 || v3.PublishedAt == nil {
		t.Fatalf("published the draft: %+v, %+v", pub, v3)
	}
	first := *v3.PublishedAt
	must[store.Agent](t)(s.PublishAgentVersion(ctx(t), root, a.ID, 1))
	again := must[store.Agent](t)(s.PublishAgentVersion(ctx(t), root, a.ID, 3))
	v3 = must[store.AgentVersion](t)(s.GetAgentVersion(ctx(t), root, a.ID, 3))
	if again.Version != 3 || !v3.PublishedAt.Equal(first) {
		t.Fatalf("second publication of version 3 moved its first: %v, was %v", v3.PublishedAt, first)
	}
	_, err := s.PublishAgentVersion(ctx(t), root, a.ID, 9)
	wantErr(t, err, store.ErrNotFound)

	arch := must[store.Agent](t)(s.ArchiveAgent(ctx(t), root, a.ID))
	if arch.ArchivedAt == nil || arch.Version != 3 {
		t.Fatalf("archived %+v", arch)
	}
	twice := must[store.Agent](t)(s.ArchiveAgent(ctx(t), root, a.ID))
	if !twice.ArchivedAt.Equal(*arch.ArchivedAt) {
		t.Fatalf("archiving again moved the time: %v, was %v", twice.ArchivedAt, arch.ArchivedAt)
	}
	read := must[store.Agent](t)(s.GetAgent(ctx(t), alice, a.ID)) // still readable
	if read.ArchivedAt == nil {
		t.Fatalf("read back %+v", read)
	}
	_, _, err = s.AddAgentVersion(ctx(t), root, store.NewAgentVersion{AgentID: a.ID, Base: 3, Spec: spec("v4")})
	wantErr(t, err, store.ErrArchived)
	_, err = s.PublishAgentVersion(ctx(t), root, a.ID, 1)
	wantErr(t, err, store.ErrArchived)
	if !errors.Is(store.ErrArchived, store.ErrConflict) {
		t.Fatal("ErrArchived does not wrap ErrConflict")
	}
}

// Of writers racing to add the next version on one base, exactly one wins.
func testRacingAgentVersions(t *testing.T, s store.Store) {
	a := newAgent(t, s, root, "v1")
	const n = 6
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, lost := 0, 0
	for i := range n {
		wg.Go(func() {
			_, _, err := s.AddAgentVersion(ctx(t), root, store.NewAgentVersion{AgentID: a.ID, Base: 1, Spec: spec(fmt.Sprint("racer ", i)), Publish: true})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, store.ErrConflict):
				lost++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if won != 1 || lost != n-1 {
		t.Fatalf("%d won, %d lost; want 1 and %d", won, lost, n-1)
	}
	got := must[store.Agent](t)(s.GetAgent(ctx(t), root, a.ID))
	if got.LatestVersion != 2 || got.Version != 2 {
		t.Fatalf("after the race %+v", got)
	}
}

func testTenantSettings(t *testing.T, s store.Store) {
	zero := must[store.TenantSettings](t)(s.TenantSettings(ctx(t), "acme"))
	if zero.Tenant != "acme" || zero.DefaultAgentID != "" || !zero.UpdatedAt.IsZero() {
		t.Fatalf("settings of a tenant without any: %+v", zero)
	}
	set := must[store.TenantSettings](t)(s.SetTenantSettings(ctx(t), root, store.TenantSettings{Tenant: "evil", DefaultAgentID: "a1"}))
	if set.Tenant != "acme" || set.DefaultAgentID != "a1" || set.UpdatedBy != "root" || set.UpdatedAt.IsZero() {
		t.Fatalf("set %+v (the tenant is the scope's, whatever the value says)", set)
	}
	got := must[store.TenantSettings](t)(s.TenantSettings(ctx(t), "acme"))
	if got.DefaultAgentID != "a1" || got.UpdatedBy != "root" || !got.UpdatedAt.Equal(set.UpdatedAt) {
		t.Fatalf("read back %+v", got)
	}
	must[store.TenantSettings](t)(s.SetTenantSettings(ctx(t), root, store.TenantSettings{DefaultAgentID: ""}))
	if got := must[store.TenantSettings](t)(s.TenantSettings(ctx(t), "acme")); got.DefaultAgentID != "" {
		t.Fatalf("cleared: %+v", got)
	}
	if other := must[store.TenantSettings](t)(s.TenantSettings(ctx(t), "evil")); other.DefaultAgentID != "" {
		t.Fatalf("another tenant's settings: %+v", other)
	}
}

// A conversation keeps the agent it was bound to, and lists filter by it; a
// run keeps the agent version it executed.
func testConversationAndRunAgents(t *testing.T, s store.Store) {
	c1 := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{Title: "support", AgentID: "agent-support"}))
	must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{Title: "sales", AgentID: "agent-sales"}))
	started := must[store.RunStarted](t)(s.StartRun(ctx(t), alice, &store.RunStart{
		NewConversation: &chat.Conversation{Title: "started", AgentID: "agent-support"},
		Run:             chat.Run{Status: chat.RunRunning, Input: "hi", AgentID: "agent-support", AgentVersion: 7},
		Message:         chat.Message{Role: chat.RoleUser, Content: "hi"},
	}))
	if started.Conversation.AgentID != "agent-support" || started.Run.AgentID != "agent-support" || started.Run.AgentVersion != 7 {
		t.Fatalf("started %+v / %+v", started.Conversation, started.Run)
	}
	if got := must[chat.Conversation](t)(s.GetConversation(ctx(t), alice, c1.ID)); got.AgentID != "agent-support" {
		t.Fatalf("conversation read back %+v", got)
	}
	r := must[chat.Run](t)(s.GetRun(ctx(t), alice, started.Run.ID))
	if r.AgentID != "agent-support" || r.AgentVersion != 7 {
		t.Fatalf("run read back %+v", r)
	}
	r2 := must[chat.Run](t)(s.CreateRun(ctx(t), alice, chat.Run{ConversationID: c1.ID, Input: "x", AgentID: "agent-support", AgentVersion: 2}))
	if got := must[chat.Run](t)(s.GetRunAnyOwner(ctx(t), "acme", r2.ID)); got.AgentID != "agent-support" || got.AgentVersion != 2 {
		t.Fatalf("created run read back %+v", got)
	}
	page, _ := mustPage[chat.Conversation](t)(s.ListConversations(ctx(t), alice, store.ConversationFilter{AgentID: "agent-support"}, store.Page{Limit: 10}))
	var titles []string
	for _, c := range page {
		titles = append(titles, c.Title)
	}
	slices.Sort(titles)
	if !slices.Equal(titles, []string{"started", "support"}) {
		t.Fatalf("conversations of agent-support: %v", titles)
	}
	if all, _ := mustPage[chat.Conversation](t)(s.ListConversations(ctx(t), alice, store.ConversationFilter{}, store.Page{Limit: 10})); len(all) != 3 {
		t.Fatalf("all conversations: %d", len(all))
	}
	if theirs, _ := mustPage[chat.Conversation](t)(s.ListConversations(ctx(t), bob, store.ConversationFilter{AgentID: "agent-support"}, store.Page{Limit: 10})); len(theirs) != 0 {
		t.Fatalf("bob lists alice's conversations: %v", theirs)
	}
}
