package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// The contract of store.Files: a file is its owner's (another user of the
// tenant, or the same name in another tenant, finds nothing), a tenant's
// usage sums its files, references tie files to conversations, and the
// sweep frees exactly the files no conversation references any more.

func newFile(t *testing.T, s store.Store, sc chat.Scope, name, sha string, size int64) store.File {
	t.Helper()
	f := must[store.File](t)(s.CreateFile(ctx(t), sc, store.File{Name: name, MediaType: "image/png", Size: size, SHA256: sha}))
	if f.ID == "" || f.Tenant != sc.Tenant || f.Owner != sc.User || f.CreatedAt.IsZero() || f.ReferencedAt != nil {
		t.Fatalf("created %+v", f)
	}
	return f
}

func sha(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

func testFileCRUDAndScoping(t *testing.T, s store.Store) {
	f := newFile(t, s, alice, "cat.png", sha('a'), 1234)
	got := must[store.File](t)(s.GetFile(ctx(t), alice, f.ID))
	if got.Name != "cat.png" || got.MediaType != "image/png" || got.Size != 1234 || got.SHA256 != sha('a') || !got.CreatedAt.Equal(f.CreatedAt) {
		t.Fatalf("got %+v, want %+v", got, f)
	}
	for _, other := range []chat.Scope{bob, eve} {
		_, err := s.GetFile(ctx(t), other, f.ID)
		wantErr(t, err, store.ErrNotFound)
		_, err = s.DeleteFile(ctx(t), other, f.ID)
		wantErr(t, err, store.ErrNotFound)
		list, _ := mustPage[store.File](t)(s.ListFiles(ctx(t), other, store.Page{Limit: 10}))
		if len(list) != 0 {
			t.Fatalf("%+v lists %d files of alice's", other, len(list))
		}
	}
	del := must[store.File](t)(s.DeleteFile(ctx(t), alice, f.ID))
	if del.ID != f.ID || del.SHA256 != f.SHA256 {
		t.Fatalf("deleted %+v", del)
	}
	_, err := s.GetFile(ctx(t), alice, f.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.DeleteFile(ctx(t), alice, f.ID)
	wantErr(t, err, store.ErrNotFound)
}

func testFilePaging(t *testing.T, s store.Store) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var ids []string
	for i := range 5 {
		f := must[store.File](t)(s.CreateFile(ctx(t), alice, store.File{Name: "f", MediaType: "text/plain", SHA256: sha('b'), CreatedAt: base.Add(time.Duration(i/2) * time.Second)}))
		ids = append(ids, f.ID)
	}
	var seen []string
	cursor := ""
	for range 10 {
		page, next := mustPage[store.File](t)(s.ListFiles(ctx(t), alice, store.Page{Limit: 2, Cursor: cursor}))
		for _, f := range page {
			seen = append(seen, f.ID)
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	if len(seen) != 5 {
		t.Fatalf("paged %d files, want 5", len(seen))
	}
	// Newest first: ids are sortable and times rise with them.
	for i := range seen {
		if seen[i] != ids[4-i] {
			t.Fatalf("order %v, want the reverse of %v", seen, ids)
		}
	}
}

func testFileQuotaUsage(t *testing.T, s store.Store) {
	if n := must[int64](t)(s.TenantFileBytes(ctx(t), "acme")); n != 0 {
		t.Fatalf("empty tenant uses %d bytes", n)
	}
	newFile(t, s, alice, "a", sha('c'), 100)
	newFile(t, s, bob, "b", sha('c'), 50)
	newFile(t, s, eve, "e", sha('c'), 7)
	if n := must[int64](t)(s.TenantFileBytes(ctx(t), "acme")); n != 150 {
		t.Fatalf("acme uses %d bytes, want 150", n)
	}
	if n := must[int64](t)(s.TenantFileBytes(ctx(t), "evil")); n != 7 {
		t.Fatalf("evil uses %d bytes, want 7", n)
	}
}

func testFileReferencesAndSweep(t *testing.T, s store.Store) {
	old := time.Now().Add(-time.Hour)
	c1 := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	c2 := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	mk := func(name string, c byte, at time.Time) store.File {
		return must[store.File](t)(s.CreateFile(ctx(t), alice, store.File{Name: name, MediaType: "text/plain", SHA256: sha(c), CreatedAt: at}))
	}
	onlyC1 := mk("only-c1", 'd', old)
	both := mk("both", 'e', old)
	unsentOld := mk("unsent-old", 'f', old)
	unsentNew := mk("unsent-new", 'f', time.Time{})

	if err := s.ReferenceFiles(ctx(t), alice, c1.ID, []string{onlyC1.ID, both.ID}); err != nil {
		t.Fatal(err)
	}
	if err := s.ReferenceFiles(ctx(t), alice, c2.ID, []string{both.ID, both.ID}); err != nil {
		t.Fatal(err)
	}
	if f := must[store.File](t)(s.GetFile(ctx(t), alice, both.ID)); f.ReferencedAt == nil {
		t.Fatal("a referenced file has no ReferencedAt")
	}
	// Another's file, or another's conversation, cannot be referenced.
	bobs := newFile(t, s, bob, "bobs", sha('g'), 1)
	wantErr(t, s.ReferenceFiles(ctx(t), alice, c1.ID, []string{unsentNew.ID, bobs.ID}), store.ErrNotFound)
	if f := must[store.File](t)(s.GetFile(ctx(t), alice, unsentNew.ID)); f.ReferencedAt != nil {
		t.Fatal("a refused ReferenceFiles recorded part of its references")
	}
	wantErr(t, s.ReferenceFiles(ctx(t), bob, c1.ID, []string{bobs.ID}), store.ErrNotFound)

	cutoff := time.Now().Add(-time.Minute)
	swept := must[[]store.File](t)(s.SweepFiles(ctx(t), cutoff, 100))
	if len(swept) != 1 || swept[0].ID != unsentOld.ID {
		t.Fatalf("first sweep removed %+v, want only the old unsent upload", swept)
	}
	if must[bool](t)(s.FileContentInUse(ctx(t), sha('f'))) != true {
		t.Fatal("content of the new unsent upload is not in use")
	}

	if err := s.DeleteConversation(ctx(t), alice, c1.ID); err != nil {
		t.Fatal(err)
	}
	swept = must[[]store.File](t)(s.SweepFiles(ctx(t), cutoff, 100))
	if len(swept) != 1 || swept[0].ID != onlyC1.ID {
		t.Fatalf("sweep after deleting c1 removed %+v, want only the file only c1 referenced", swept)
	}
	if must[bool](t)(s.FileContentInUse(ctx(t), sha('d'))) {
		t.Fatal("content of the swept file is still in use")
	}
	must[store.File](t)(s.GetFile(ctx(t), alice, both.ID))
	must[store.File](t)(s.GetFile(ctx(t), alice, unsentNew.ID))

	if err := s.DeleteConversation(ctx(t), alice, c2.ID); err != nil {
		t.Fatal(err)
	}
	swept = must[[]store.File](t)(s.SweepFiles(ctx(t), cutoff, 100))
	if len(swept) != 1 || swept[0].ID != both.ID {
		t.Fatalf("sweep after deleting c2 removed %+v, want only the file both referenced", swept)
	}
}

// Sweeps at once (replicas, and a conversation's delete beside the hourly
// retention) take each file once, and each finds, as it returns, every
// file gone that it could have swept: one that met a file another sweep
// was deleting waited for it rather than passing it over while it was
// still readable. Each sweeps in batches, as the file service does, until
// a batch comes back short.
func testConcurrentFileSweeps(t *testing.T, s store.Store) {
	const n, sweeps, batch = 400, 4, 25
	old := time.Now().Add(-time.Hour)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = must[store.File](t)(s.CreateFile(ctx(t), alice, store.File{Name: fmt.Sprint(i), MediaType: "text/plain", SHA256: sha('h'), CreatedAt: old})).ID
	}
	var wg sync.WaitGroup
	taken := make([][]store.File, sweeps)
	errs := make([]error, sweeps)
	for i := range sweeps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				files, err := s.SweepFiles(ctx(t), time.Now(), batch)
				if err != nil {
					errs[i] = err
					return
				}
				taken[i] = append(taken[i], files...)
				if len(files) < batch {
					break
				}
			}
			// The last files first: those another sweep may still be
			// deleting.
			for _, id := range slices.Backward(ids) {
				if _, err := s.GetFile(ctx(t), alice, id); !errors.Is(err, store.ErrNotFound) {
					errs[i] = fmt.Errorf("file %s readable (%v) after a sweep that took %d returned", id, err, len(taken[i]))
					return
				}
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range sweeps {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		for _, f := range taken[i] {
			if seen[f.ID] {
				t.Fatalf("file %s swept twice", f.ID)
			}
			seen[f.ID] = true
		}
	}
	if len(seen) != n {
		t.Fatalf("%d files swept, want %d", len(seen), n)
	}
}
