package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/retrieval"
	"github.com/agentchat/agentchat/internal/store"
)

// RunKnowledge is the contract of store.Knowledge: the knowledge base,
// memory, blobs and compaction, with the tokeniser retrieval uses.
func RunKnowledge(t *testing.T, newStore func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"DocumentsTenantWide", testDocumentsTenantWide},
		{"DocumentPaging", testDocumentPaging},
		{"SearchChineseWithoutSpaces", testSearchChinese},
		{"SearchRanksAndDeletes", testSearchRanksAndDeletes},
		{"SearchFindsTheFirstDocumentAtOnce", testSearchFirstDocument},
		{"KnowledgeVectors", testKnowledgeVectors},
		{"KnowledgeCollections", testKnowledgeCollections},
		{"MemoryIsTheUsersOwn", testMemoryScoping},
		{"Blobs", testBlobs},
		{"CompactionAndArchive", testCompaction},
		{"CompactionRefusedWhileBusy", testCompactionBusy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStore(t))
		})
	}
}

func doc(t *testing.T, s store.Store, sc chat.Scope, source string, texts ...string) store.Document {
	t.Helper()
	var chunks []store.Chunk
	for i, x := range texts {
		chunks = append(chunks, store.Chunk{Ordinal: i, Content: x, Terms: retrieval.IndexText(x)})
	}
	return must[store.Document](t)(s.CreateDocument(ctx(t), sc, store.Document{Source: source, MediaType: "text/plain", Bytes: 10,
		Metadata: json.RawMessage(`{"lang": "zh"}`)}, chunks))
}

func testDocumentsTenantWide(t *testing.T, s store.Store) {
	d := doc(t, s, alice, "policy.md", "hello world")
	if d.ID == "" || d.Tenant != "acme" || d.Owner != "alice" || d.Chunks != 1 || d.CreatedAt.IsZero() {
		t.Fatalf("created %+v", d)
	}
	got := must[store.Document](t)(s.GetDocument(ctx(t), bob, d.ID)) // same tenant, another user
	if got.Source != "policy.md" || string(got.Metadata) != `{"lang": "zh"}` || !got.CreatedAt.Equal(d.CreatedAt) {
		t.Fatalf("bob reads %+v", got)
	}
	_, err := s.GetDocument(ctx(t), eve, d.ID)
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.DeleteDocument(ctx(t), eve, d.ID), store.ErrNotFound)
	if hits := must[[]store.Passage](t)(s.SearchKnowledge(ctx(t), eve, store.KnowledgeQuery{Terms: []string{"hello"}, Limit: 5})); len(hits) != 0 {
		t.Fatalf("another tenant finds %+v", hits)
	}
	if err := s.DeleteDocument(ctx(t), bob, d.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetDocument(ctx(t), alice, d.ID)
	wantErr(t, err, store.ErrNotFound)
}

func testDocumentPaging(t *testing.T, s store.Store) {
	for i := range 5 {
		doc(t, s, alice, fmt.Sprintf("d%d", i), "text")
	}
	doc(t, s, eve, "theirs", "text")
	var seen []string
	cursor := ""
	for {
		page, next := mustPage[store.Document](t)(s.ListDocuments(ctx(t), bob, store.DocumentFilter{}, store.Page{Limit: 2, Cursor: cursor}))
		for _, d := range page {
			seen = append(seen, d.Source)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if fmt.Sprint(seen) != "[d4 d3 d2 d1 d0]" {
		t.Fatalf("pages %v", seen)
	}
}

func testSearchChinese(t *testing.T, s store.Store) {
	d := doc(t, s, alice, "退货政策.md",
		"我们的退货政策：商品在签收后七天内可以无理由退货，运费由买家承担。",
		"会员积分可以在下次购物时抵扣现金，每一百积分抵扣一元。")
	doc(t, s, alice, "other.md", "The office opens at nine in the morning.")
	for _, q := range []string{"退货政策是什么", "几天内可以退货？", "积分怎么抵扣"} {
		hits := must[[]store.Passage](t)(s.SearchKnowledge(ctx(t), bob, store.KnowledgeQuery{Terms: retrieval.QueryTerms(q), Limit: 3}))
		if len(hits) == 0 || hits[0].DocumentID != d.ID || hits[0].Source != "退货政策.md" || hits[0].Score <= 0 || hits[0].ChunkID == "" {
			t.Fatalf("%s: hits %+v", q, hits)
		}
	}
	top := must[[]store.Passage](t)(s.SearchKnowledge(ctx(t), alice, store.KnowledgeQuery{Terms: retrieval.QueryTerms("积分怎么抵扣"), Limit: 3}))
	if top[0].Content != "会员积分可以在下次购物时抵扣现金，每一百积分抵扣一元。" {
		t.Fatalf("best chunk %q", top[0].Content)
	}
	if hits := must[[]store.Passage](t)(s.SearchKnowledge(ctx(t), alice, store.KnowledgeQuery{Terms: retrieval.QueryTerms("天气预报"), Limit: 3})); len(hits) != 0 {
		t.Fatalf("unrelated question finds %+v", hits)
	}
}

func testSearchRanksAndDeletes(t *testing.T, s store.Store) {
	a := doc(t, s, alice, "a", "Redis streams carry the events between replicas; redis is fast.")
	doc(t, s, alice, "b", "PostgreSQL stores conversations.")
	hits := must[[]store.Passage](t)(s.SearchKnowledge(ctx(t), alice, store.KnowledgeQuery{Terms: retrieval.QueryTerms("what about redis streams?"), Limit: 5}))
	if len(hits) != 1 || hits[0].DocumentID != a.ID {
		t.Fatalf("hits %+v", hits)
	}
	// Terms that read as query operators are only words.
	if _, err := s.SearchKnowledge(ctx(t), alice, store.KnowledgeQuery{Terms: []string{"or", "not", "and", `"x`, "near"}, Limit: 5}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteDocument(ctx(t), alice, a.ID); err != nil {
		t.Fatal(err)
	}
	if hits := must[[]store.Passage](t)(s.SearchKnowledge(ctx(t), alice, store.KnowledgeQuery{Terms: []string{"redis"}, Limit: 5})); len(hits) != 0 {
		t.Fatalf("a deleted document is found: %+v", hits)
	}
}

// testSearchFirstDocument: a tenant's knowledge base going from empty to
// one document and back is seen by the very next search, whatever a
// backend keeps to skip searching an empty one.
func testSearchFirstDocument(t *testing.T, s store.Store) {
	search := func(sc chat.Scope) int {
		t.Helper()
		return len(must[[]store.Passage](t)(s.SearchKnowledge(ctx(t), sc, store.KnowledgeQuery{Terms: []string{"kiwi"}, Limit: 5})))
	}
	vectors := func(sc chat.Scope) int {
		t.Helper()
		return len(must[[]store.Passage](t)(s.KnowledgeVectors(ctx(t), sc, nil, 5)))
	}
	if n := search(alice); n != 0 {
		t.Fatalf("an empty knowledge base finds %d", n)
	}
	for round := range 2 {
		d := must[store.Document](t)(s.CreateDocument(ctx(t), alice, store.Document{Source: "fruit"},
			[]store.Chunk{{Content: "kiwi", Terms: "kiwi", Embedding: []float32{1, 0}}}))
		if n, v := search(bob), vectors(bob); n != 1 || v != 1 {
			t.Fatalf("round %d: the tenant's first document: %d hits, %d vectors", round, n, v)
		}
		if n, v := search(eve), vectors(eve); n != 0 || v != 0 {
			t.Fatalf("round %d: another tenant: %d hits, %d vectors", round, n, v)
		}
		// A document refused (its id taken) leaves the first one found.
		_, err := s.CreateDocument(ctx(t), alice, store.Document{ID: d.ID, Source: "again"}, []store.Chunk{{Content: "kiwi", Terms: "kiwi"}})
		wantErr(t, err, store.ErrConflict)
		if n := search(alice); n != 1 {
			t.Fatalf("round %d: after a refused upload: %d hits", round, n)
		}
		if err := s.DeleteDocument(ctx(t), alice, d.ID); err != nil {
			t.Fatal(err)
		}
		if n, v := search(alice), vectors(alice); n != 0 || v != 0 {
			t.Fatalf("round %d: after the last document went: %d hits, %d vectors", round, n, v)
		}
	}
}

func testKnowledgeVectors(t *testing.T, s store.Store) {
	must[store.Document](t)(s.CreateDocument(ctx(t), alice, store.Document{Source: "v"}, []store.Chunk{
		{Content: "one", Terms: "one", Embedding: []float32{1, 0.5, -0.25}},
		{Ordinal: 1, Content: "two", Terms: "two"},
	}))
	vs := must[[]store.Passage](t)(s.KnowledgeVectors(ctx(t), bob, nil, 10))
	if len(vs) != 1 || vs[0].Content != "one" || fmt.Sprint(vs[0].Embedding) != "[1 0.5 -0.25]" {
		t.Fatalf("vectors %+v", vs)
	}
	if vs := must[[]store.Passage](t)(s.KnowledgeVectors(ctx(t), eve, nil, 10)); len(vs) != 0 {
		t.Fatalf("another tenant's vectors: %+v", vs)
	}
}

func testMemoryScoping(t *testing.T, s store.Store) {
	old := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	cur := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	bobs := must[chat.Conversation](t)(s.CreateConversation(ctx(t), bob, chat.Conversation{}))
	remember := func(sc chat.Scope, conv, id, text string) error {
		return s.Remember(ctx(t), sc, store.MemoryEntry{MessageID: id, ConversationID: conv, Role: chat.RoleUser, Content: text, Terms: retrieval.IndexText(text)})
	}
	for _, err := range []error{
		remember(alice, old.ID, "m1", "我的猫叫小花"),
		remember(alice, old.ID, "m1", "我的猫叫小花"), // repeated: no-op
		remember(alice, cur.ID, "m2", "小花今天生病了"),
		remember(bob, bobs.ID, "m3", "小花是我的狗"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	wantErr(t, remember(bob, old.ID, "m4", "小花"), store.ErrNotFound)
	hits := must[[]store.Passage](t)(s.SearchMemory(ctx(t), alice, retrieval.QueryTerms("小花是谁"), cur.ID, 5))
	if len(hits) != 1 || hits[0].ChunkID != "m1" || hits[0].DocumentID != old.ID {
		t.Fatalf("alice's memory: %+v", hits)
	}
	if err := s.DeleteConversation(ctx(t), alice, old.ID); err != nil {
		t.Fatal(err)
	}
	if hits := must[[]store.Passage](t)(s.SearchMemory(ctx(t), alice, retrieval.QueryTerms("小花"), "", 5)); len(hits) != 1 || hits[0].ChunkID != "m2" {
		t.Fatalf("after delete: %+v", hits)
	}
}

func testBlobs(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	data := json.RawMessage(`{"chart_data": {"labels": ["a", "b"], "values": [1, 2]}}`)
	b := must[chat.Blob](t)(s.PutBlob(ctx(t), alice, chat.Blob{ConversationID: c.ID, Data: data}))
	got := must[chat.Blob](t)(s.GetBlob(ctx(t), alice, b.ID))
	var x, y any
	json.Unmarshal(got.Data, &x)
	json.Unmarshal(data, &y)
	if fmt.Sprint(x) != fmt.Sprint(y) || got.ConversationID != c.ID {
		t.Fatalf("blob %s", got.Data)
	}
	for _, other := range []chat.Scope{bob, eve} {
		_, err := s.GetBlob(ctx(t), other, b.ID)
		wantErr(t, err, store.ErrNotFound)
		_, err = s.PutBlob(ctx(t), other, chat.Blob{ConversationID: c.ID, Data: data})
		wantErr(t, err, store.ErrNotFound)
	}
	if err := s.DeleteConversation(ctx(t), alice, c.ID); err != nil {
		t.Fatal(err)
	}
	_, err := s.GetBlob(ctx(t), alice, b.ID)
	wantErr(t, err, store.ErrNotFound)
}

func testCompaction(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	_, err := s.LatestCompaction(ctx(t), alice, c.ID)
	wantErr(t, err, store.ErrNotFound)
	var msgs []chat.Message
	base := time.Now().Add(-time.Hour)
	for i := range 5 {
		msgs = append(msgs, must[chat.Message](t)(s.AppendMessage(ctx(t), alice, chat.Message{ConversationID: c.ID, Role: chat.RoleUser,
			Content: fmt.Sprint("m", i), Metadata: json.RawMessage(`{"k": 1}`), CreatedAt: base.Add(time.Duration(i) * time.Second)})))
	}
	k := must[store.Compaction](t)(s.Compact(ctx(t), alice, store.Compaction{ConversationID: c.ID, Summary: "sum",
		ThroughID: msgs[2].ID, ThroughAt: msgs[2].CreatedAt}, msgs[:3], ""))
	if k.ID == "" || k.Archived != 3 {
		t.Fatalf("compaction %+v", k)
	}
	got := must[store.Compaction](t)(s.LatestCompaction(ctx(t), alice, c.ID))
	if got.Summary != "sum" || got.ThroughID != msgs[2].ID || !got.ThroughAt.Equal(msgs[2].CreatedAt.UTC().Truncate(time.Millisecond)) {
		t.Fatalf("latest %+v", got)
	}
	_, err = s.LatestCompaction(ctx(t), bob, c.ID)
	wantErr(t, err, store.ErrNotFound)
	_, _, err = s.ListArchive(ctx(t), eve, c.ID, store.Page{Limit: 10})
	wantErr(t, err, store.ErrNotFound)
	var archived []chat.Message
	cursor := ""
	for {
		page, next, err := s.ListArchive(ctx(t), alice, c.ID, store.Page{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		archived = append(archived, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	if len(archived) != 3 || archived[0].ID != msgs[0].ID || archived[2].Content != "m2" || string(archived[1].Metadata) != `{"k": 1}` || !archived[0].CreatedAt.Equal(msgs[0].CreatedAt) {
		t.Fatalf("archive %+v", archived)
	}
	// The live history is untouched.
	live, _, _ := s.ListMessages(ctx(t), alice, c.ID, store.MessageFilter{}, store.Page{Limit: 10})
	if len(live) != 5 {
		t.Fatalf("live messages %d", len(live))
	}
	if err := s.DeleteConversation(ctx(t), alice, c.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.LatestCompaction(ctx(t), alice, c.ID)
	wantErr(t, err, store.ErrNotFound)
}

func testCompactionBusy(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	m := must[chat.Message](t)(s.AppendMessage(ctx(t), alice, chat.Message{ConversationID: c.ID, Role: chat.RoleUser, Content: "x"}))
	r := must[chat.Run](t)(s.CreateRun(ctx(t), alice, chat.Run{ConversationID: c.ID, Input: "x", Status: chat.RunRunning}))
	k := store.Compaction{ConversationID: c.ID, Summary: "s", ThroughID: m.ID, ThroughAt: m.CreatedAt}
	_, err := s.Compact(ctx(t), alice, k, []chat.Message{m}, "")
	var busy *store.BusyError
	if !errors.As(err, &busy) || busy.ActiveRunID != r.ID || !errors.Is(err, store.ErrConflict) {
		t.Fatalf("err %v, want busy with %s", err, r.ID)
	}
	if _, err := s.LatestCompaction(ctx(t), alice, c.ID); err == nil {
		t.Fatal("a refused compaction was stored")
	}
	// The active run itself may compact (automatic compaction before its turn).
	must[store.Compaction](t)(s.Compact(ctx(t), alice, k, []chat.Message{m}, r.ID))
	_, err = s.Compact(ctx(t), bob, k, nil, "")
	wantErr(t, err, store.ErrNotFound)
}

// A document belongs to one collection ("default" unless it names one);
// searches and vector reads keep the collections asked for: all when nil,
// none when empty.
func testKnowledgeCollections(t *testing.T, s store.Store) {
	mk := func(collection, source, text string) store.Document {
		return must[store.Document](t)(s.CreateDocument(ctx(t), alice, store.Document{Source: source, Collection: collection, MediaType: "text/plain", Bytes: len(text)},
			[]store.Chunk{{Content: text, Terms: retrieval.IndexText(text), Embedding: []float32{1, 0}}}))
	}
	def := mk("", "faq.md", "refunds take five days")
	sales := mk("sales", "pricing.md", "refunds are not offered on discounts")
	if def.Collection != store.DefaultCollection || sales.Collection != "sales" {
		t.Fatalf("collections %q, %q", def.Collection, sales.Collection)
	}
	if got := must[store.Document](t)(s.GetDocument(ctx(t), bob, sales.ID)); got.Collection != "sales" {
		t.Fatalf("read back %+v", got)
	}
	terms := retrieval.QueryTerms("refunds")
	sources := func(ps []store.Passage) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Source)
		}
		slices.Sort(out)
		return out
	}
	for _, tt := range []struct {
		collections []string
		want        []string
	}{
		{nil, []string{"faq.md", "pricing.md"}},
		{[]string{}, nil},
		{[]string{"sales"}, []string{"pricing.md"}},
		{[]string{"default", "sales"}, []string{"faq.md", "pricing.md"}},
		{[]string{"other"}, nil},
	} {
		hits := must[[]store.Passage](t)(s.SearchKnowledge(ctx(t), alice, store.KnowledgeQuery{Terms: terms, Collections: tt.collections, Limit: 10}))
		if got := sources(hits); !slices.Equal(got, tt.want) {
			t.Errorf("search in %v: %v, want %v", tt.collections, got, tt.want)
		}
		vecs := must[[]store.Passage](t)(s.KnowledgeVectors(ctx(t), alice, tt.collections, 10))
		if got := sources(vecs); !slices.Equal(got, tt.want) {
			t.Errorf("vectors of %v: %v, want %v", tt.collections, got, tt.want)
		}
	}
	page, _ := mustPage[store.Document](t)(s.ListDocuments(ctx(t), alice, store.DocumentFilter{Collection: "sales"}, store.Page{Limit: 10}))
	if len(page) != 1 || page[0].ID != sales.ID {
		t.Fatalf("documents of sales: %+v", page)
	}
}
