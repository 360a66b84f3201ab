package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/file"
	"github.com/agentchat/agentchat/internal/file/diskfile"
	"github.com/agentchat/agentchat/internal/file/filetest"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/pgstore"
)

// testFiles is the file service of a test stack with o.files set: its
// bytes in the database on PostgreSQL (as serve chooses there), on disk
// otherwise.
func testFiles(t *testing.T, o options, st store.Store) *file.Service {
	if !o.files {
		return nil
	}
	var storage file.Storage
	if pg, ok := st.(*pgstore.Store); ok {
		storage = pg.FileStorage()
	} else {
		var err error
		if storage, err = diskfile.Open(t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	return file.NewService(file.Config{Store: st, Storage: storage, MaxBytes: o.fileMax, Types: o.fileTypes, Fetch: o.fetch, TempDir: t.TempDir()})
}

// pngBytes is a PNG as sniffing sees one: its signature, then anything.
var pngBytes = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{7}, 300)...)

// pdfBytes is a PDF as sniffing sees one.
var pdfBytes = []byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")

// upload posts b as a multipart form's file field.
func (e *env) uploadFile(token, name string, b []byte, status int) map[string]any {
	e.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", name)
	fw.Write(b)
	mw.Close()
	return e.call(req{method: "POST", path: "/v1/files", token: token, body: body.String(),
		header: map[string]string{"Content-Type": mw.FormDataContentType()}}, status)
}

func TestFilesUploadReadScoping(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, o options) {
		o.files = true
		e := setup(t, o)
		f := e.uploadFile(alice, "cat.png", pngBytes, http.StatusCreated)
		id, _ := f["id"].(string)
		if f["name"] != "cat.png" || f["mediaType"] != "image/png" || f["size"] != float64(len(pngBytes)) || f["url"] != "/v1/files/"+id+"/content" {
			t.Fatalf("uploaded %v", f)
		}
		if got := e.call(req{method: "GET", path: "/v1/files/" + id, token: alice}, 200); got["sha256"] != f["sha256"] {
			t.Fatalf("metadata %v", got)
		}
		resp := e.send(req{method: "GET", path: "/v1/files/" + id + "/content", token: alice})
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		h := resp.Header
		if resp.StatusCode != 200 || !bytes.Equal(raw, pngBytes) || h.Get("Content-Type") != "image/png" || h.Get("X-Content-Type-Options") != "nosniff" ||
			!strings.Contains(h.Get("Content-Security-Policy"), "sandbox") || !strings.HasPrefix(h.Get("Content-Disposition"), "inline") || h.Get("ETag") != `"`+f["sha256"].(string)+`"` {
			t.Fatalf("content: %d, %d bytes, headers %v", resp.StatusCode, len(raw), h)
		}
		// Range and ETag.
		resp = e.send(req{method: "GET", path: "/v1/files/" + id + "/content", token: alice, header: map[string]string{"Range": "bytes=2-5"}})
		raw, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(raw, pngBytes[2:6]) {
			t.Fatalf("range: %d %q", resp.StatusCode, raw)
		}
		resp = e.send(req{method: "GET", path: "/v1/files/" + id + "/content", token: alice, header: map[string]string{"If-None-Match": h.Get("ETag")}})
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotModified {
			t.Fatalf("If-None-Match: %d", resp.StatusCode)
		}
		// The token in the query, for an <img> tag.
		resp = e.send(req{method: "GET", path: "/v1/files/" + id + "/content?access_token=" + alice})
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("access_token: %d", resp.StatusCode)
		}
		// Another user of the tenant, another tenant: 404, never the content.
		for _, other := range []string{bob, eve} {
			e.apiError(req{method: "GET", path: "/v1/files/" + id, token: other}, 404, "file_not_found")
			e.apiError(req{method: "GET", path: "/v1/files/" + id + "/content", token: other}, 404, "file_not_found")
			e.apiError(req{method: "DELETE", path: "/v1/files/" + id, token: other}, 404, "file_not_found")
			if l := e.call(req{method: "GET", path: "/v1/files", token: other}, 200); len(l["files"].([]any)) != 0 {
				t.Fatalf("%s lists %v", other, l)
			}
		}
		// A text file is an attachment, with its charset; a raw body works too.
		txt := e.call(req{method: "POST", path: "/v1/files?filename=notes.md", token: alice, body: "# Notes\nplain text",
			header: map[string]string{"Content-Type": "image/png"}}, 201) // the claimed type is ignored
		if txt["mediaType"] != "text/markdown" {
			t.Fatalf("raw upload %v", txt)
		}
		resp = e.send(req{method: "GET", path: "/v1/files/" + txt["id"].(string) + "/content", token: alice})
		resp.Body.Close()
		if !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") || resp.Header.Get("Content-Type") != "text/markdown; charset=utf-8" {
			t.Fatalf("text content headers %v", resp.Header)
		}
		if l := e.call(req{method: "GET", path: "/v1/files?limit=1", token: alice}, 200); len(l["files"].([]any)) != 1 || l["hasMore"] != true {
			t.Fatalf("page %v", l)
		}
		e.call(req{method: "DELETE", path: "/v1/files/" + id, token: alice}, 204)
		e.apiError(req{method: "GET", path: "/v1/files/" + id + "/content", token: alice}, 404, "file_not_found")
	})
}

func TestFilesHostileUploads(t *testing.T) {
	t.Parallel()
	e := setup(t, options{files: true})
	// HTML (a polyglot named .png) is sniffed as what it is, and refused.
	e.apiError(req{method: "POST", path: "/v1/files?filename=cat.png", token: alice,
		body: "<html><script>alert(document.cookie)</script>\x89PNG", header: map[string]string{"Content-Type": "image/png"}}, 415, "unsupported_file_type")
	e.uploadFile(alice, "evil.svg", []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), 415)
	// A body declared as 30 MiB, over the 20 MiB default, is refused on its
	// headers alone: the answer comes with none of the body sent.
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/files?filename=big.png HTTP/1.1\r\nHost: agentchat\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", alice, 30<<20)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(raw), "file_too_large") {
		t.Fatalf("declared 30 MiB: %d %s", resp.StatusCode, raw)
	}
	// Bodies really sent over the limit, against a server whose limit is
	// 1 MiB: the same shapes as over the default, with a twentieth of the
	// bytes (30 MiB bodies took 12 s of the package under -race).
	small := setup(t, options{files: true, fileMax: 1 << 20})
	big := make([]byte, 3<<19) // 1.5 MiB
	copy(big, pngBytes)
	resp = small.send(req{method: "POST", path: "/v1/files?filename=big.png", token: alice, body: string(big)})
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(raw), "file_too_large") {
		t.Fatalf("1.5 MiB: %d %s", resp.StatusCode, raw)
	}
	// Without a Content-Length (chunked), it is cut at the limit all the same.
	hr, _ := http.NewRequest("POST", small.url+"/v1/files?filename=big.png", io.MultiReader(bytes.NewReader(big)))
	hr.Header.Set("Authorization", "Bearer "+alice)
	hr.ContentLength = -1
	resp, err = http.DefaultClient.Do(hr)
	if err == nil {
		raw, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("chunked 1.5 MiB: %d %s", resp.StatusCode, raw)
		}
	}
	if l := small.call(req{method: "GET", path: "/v1/files", token: alice}, 200); len(l["files"].([]any)) != 0 {
		t.Fatalf("refused uploads stored files: %v", l)
	}
	// A URL to this very server (loopback) is refused by the SSRF guard.
	e.apiError(req{method: "POST", path: "/v1/agent/chat?format=vercel-ai", token: alice, body: map[string]any{
		"id": "hostile-url", "messages": []any{map[string]any{"id": "m1", "role": "user", "parts": []any{
			map[string]any{"type": "text", "text": "look"},
			map[string]any{"type": "file", "mediaType": "image/png", "url": "http://127.0.0.1:1/secret.png"}}}}}}, 422, "file_url_refused")
	if l := e.call(req{method: "GET", path: "/v1/files", token: alice}, 200); len(l["files"].([]any)) != 0 {
		t.Fatalf("refused uploads stored files: %v", l)
	}
}

// An image and a PDF reach the (offline) model from each of the three chat
// surfaces, and the history references them as files.
func TestAttachmentsFromEverySurface(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, o options) {
		o.files = true
		e := setup(t, o)
		img := e.uploadFile(alice, "cat.png", pngBytes, 201)["id"].(string)
		pdf := e.uploadFile(alice, "handbook.pdf", pdfBytes, 201)["id"].(string)
		const ack = "with 1 image and 1 document"

		// Native: attachments by id.
		frames := e.chat(alice, map[string]any{"input": "what is this?", "attachments": []string{img, pdf}})
		msg, _ := find(frames, "agent.message")
		if !strings.Contains(fmt.Sprint(msg.Data), ack) {
			t.Fatalf("native: the model did not receive both files: %v", msg.Data)
		}
		conv := last(frames).Data["conversationId"]
		if conv == nil {
			start, _ := find(frames, "agent.start")
			conv = start.Data["conversationId"]
		}
		hist := e.call(req{method: "GET", path: fmt.Sprintf("/v1/conversations/%v/messages", conv), token: alice}, 200)
		parts := fmt.Sprint(hist)
		if !strings.Contains(parts, img) || !strings.Contains(parts, pdf) || strings.Contains(parts, "base64") {
			t.Fatalf("history does not reference the files by id: %s", parts)
		}
		// Another user's file cannot be attached.
		bobs := e.uploadFile(bob, "b.png", pngBytes, 201)["id"].(string)
		e.apiError(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "x", "attachments": []string{bobs}}}, 404, "file_not_found")

		// AI SDK: file parts with data: URLs, stored as files on arrival.
		dataURL := func(mt string, b []byte) string {
			return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(b)
		}
		resp := e.send(req{method: "POST", path: "/v1/agent/chat?format=vercel-ai", token: alice, body: map[string]any{
			"id": "chat-files", "messages": []any{map[string]any{"id": "m1", "role": "user", "parts": []any{
				map[string]any{"type": "text", "text": "and these?"},
				map[string]any{"type": "file", "mediaType": "image/png", "filename": "dog.png", "url": dataURL("image/png", pngBytes)},
				map[string]any{"type": "file", "mediaType": "application/pdf", "filename": "doc.pdf", "url": dataURL("application/pdf", pdfBytes)}}}}}})
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(deltas(raw), ack) {
			t.Fatalf("vercel: %d %s", resp.StatusCode, raw)
		}

		// AG-UI: 1.0 image and document parts with data sources.
		resp = e.send(req{method: "POST", path: "/api/v1/agent/runs", token: alice, body: map[string]any{
			"threadId": "thread-files", "runId": "run-files", "state": map[string]any{}, "tools": []any{}, "context": []any{}, "forwardedProps": map[string]any{},
			"messages": []any{map[string]any{"id": "u1", "role": "user", "content": []any{
				map[string]any{"type": "text", "text": "and now?"},
				map[string]any{"type": "image", "source": map[string]any{"type": "data", "value": base64.StdEncoding.EncodeToString(pngBytes), "mimeType": "image/png"}},
				map[string]any{"type": "document", "source": map[string]any{"type": "data", "value": base64.StdEncoding.EncodeToString(pdfBytes), "mimeType": "application/pdf"}}}}}}})
		raw, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("ag-ui: %d %s", resp.StatusCode, raw)
		}
		// Each surface's files are alice's files now: 2 uploads + 2 + 2.
		if l := e.call(req{method: "GET", path: "/v1/files?limit=100", token: alice}, 200); len(l["files"].([]any)) != 6 {
			t.Fatalf("alice has %d files, want 6", len(l["files"].([]any)))
		}
	})
}

// Deleting a conversation deletes the files only it referenced: their
// content answers 404; a file another conversation also sent stays.
func TestDeletingAConversationDeletesItsFiles(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, o options) {
		o.files = true
		e := setup(t, o)
		only := e.uploadFile(alice, "only.png", pngBytes, 201)["id"].(string)
		shared := e.uploadFile(alice, "shared.pdf", pdfBytes, 201)["id"].(string)
		conversation := func(ids ...string) string {
			frames := e.chat(alice, map[string]any{"input": "look", "attachments": ids})
			start, _ := find(frames, "agent.start")
			id, _ := start.Data["conversationId"].(string)
			if id == "" {
				t.Fatalf("no conversation in %v", start.Data)
			}
			return id
		}
		first := conversation(only, shared)
		conversation(shared)
		e.call(req{method: "DELETE", path: "/v1/conversations/" + first, token: alice}, 204)
		e.apiError(req{method: "GET", path: "/v1/files/" + only + "/content", token: alice}, 404, "file_not_found")
		resp := e.send(req{method: "GET", path: "/v1/files/" + shared + "/content", token: alice})
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Equal(raw, pdfBytes) {
			t.Fatalf("the file the other conversation sent: %d, %d bytes", resp.StatusCode, len(raw))
		}
	})
}

// deltas joins the text deltas of an AI SDK or AG-UI stream.
func deltas(raw []byte) string {
	var b strings.Builder
	for _, m := range deltaRE.FindAllSubmatch(raw, -1) {
		var s string
		_ = json.Unmarshal([]byte(`"`+string(m[1])+`"`), &s)
		b.WriteString(s)
	}
	return b.String()
}

var deltaRE = regexp.MustCompile(`"delta":"((?:[^"\\]|\\.)*)"`)

// A PDF uploaded once is indexed into the knowledge base by its id and
// answers a knowledge question with its text in the retrieval event.
func TestKnowledgeFromFile(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, o options) {
		o.files, o.knowledge = true, true
		e := setup(t, o)
		pdf := e.uploadFile(alice, "handbook.pdf", filetest.PDF("Returns are accepted within thirty days of delivery.",
			"Shipping is free above fifty euros."), 201)["id"].(string)
		doc := e.call(req{method: "POST", path: "/v1/knowledge/documents", token: alice,
			body: map[string]any{"fileId": pdf, "collection": "handbooks", "metadata": map[string]any{"team": "support"}}}, 201)
		meta, _ := doc["metadata"].(map[string]any)
		if doc["source"] != "handbook.pdf" || doc["collection"] != "handbooks" || meta["fileId"] != pdf || meta["team"] != "support" {
			t.Fatalf("document %v", doc)
		}
		// A source given names it instead of the file's name.
		named := e.call(req{method: "POST", path: "/v1/knowledge/documents", token: alice, body: map[string]any{"fileId": pdf, "source": "Handbook 2026"}}, 201)
		if named["source"] != "Handbook 2026" || named["collection"] != "default" {
			t.Fatalf("named document %v", named)
		}
		e.call(req{method: "DELETE", path: "/v1/knowledge/documents/" + named["id"].(string), token: alice}, 204)
		fs := e.conversationTurn(alice, map[string]any{"input": "within how many days are returns accepted?"})
		ri := indexOf(fs, "retrieval")
		if ri < 0 {
			t.Fatalf("no retrieval: %v", frameNames(fs))
		}
		hits, _ := fs[ri].Data["hits"].([]any)
		if len(hits) == 0 {
			t.Fatalf("retrieval %v", fs[ri].Data)
		}
		h := hits[0].(map[string]any)
		if h["source"] != "handbook.pdf" || h["documentId"] != doc["id"] || !strings.Contains(fmt.Sprint(h["content"]), "Returns are accepted within thirty days") {
			t.Fatalf("hit %v", h)
		}

		// Refusals: another user's file, an image, text and a file at once,
		// a PDF with no readable text.
		e.apiError(req{method: "POST", path: "/v1/knowledge/documents", token: bob, body: map[string]any{"fileId": pdf}}, 404, "file_not_found")
		img := e.uploadFile(alice, "cat.png", pngBytes, 201)["id"].(string)
		e.apiError(req{method: "POST", path: "/v1/knowledge/documents", token: alice, body: map[string]any{"fileId": img}}, 415, "unsupported_file_type")
		e.apiError(req{method: "POST", path: "/v1/knowledge/documents", token: alice, body: map[string]any{"fileId": pdf, "text": "x"}}, 422, "invalid_field")
		broken := e.uploadFile(alice, "broken.pdf", pdfBytes, 201)["id"].(string)
		e.apiError(req{method: "POST", path: "/v1/knowledge/documents", token: alice, body: map[string]any{"fileId": broken}}, 422, "invalid_field")
	})
}
