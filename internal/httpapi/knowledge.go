package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/compaction"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/dialect/native"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/file"
	"github.com/agentchat/agentchat/internal/retrieval"
	"github.com/agentchat/agentchat/internal/store"
)

// contextRoutes adds the seed 002 context-management routes: the knowledge
// base, compaction and the archive.
func (s *Server) contextRoutes(api func(string, handlerFunc)) {
	api("POST /v1/knowledge/documents", s.createDocument)
	api("GET /v1/knowledge/documents", s.listDocuments)
	api("GET /v1/knowledge/documents/{id}", s.getDocument)
	api("DELETE /v1/knowledge/documents/{id}", s.deleteDocument)
	api("POST /v1/conversations/{id}/compact", s.compact)
	api("GET /v1/conversations/{id}/archive", s.listArchive)
}

// documentView is the API shape of a knowledge-base document.
type documentView struct {
	ID     string `json:"id"`
	Source string `json:"source"`
	// Collection is the knowledge collection the document belongs to.
	Collection string          `json:"collection"`
	MediaType  string          `json:"mediaType"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	Bytes      int             `json:"bytes"`
	Chunks     int             `json:"chunks"`
	CreatedBy  string          `json:"createdBy"`
	CreatedAt  string          `json:"createdAt"`
}

func viewDocument(d store.Document) documentView {
	return documentView{ID: d.ID, Source: d.Source, Collection: d.Collection, MediaType: d.MediaType, Metadata: d.Metadata, Bytes: d.Bytes, Chunks: d.Chunks,
		CreatedBy: d.Owner, CreatedAt: dialect.Millis(d.CreatedAt)}
}

func documentErr(err error) error { return toAPIError(err, errcode.DocumentNotFound, "document") }

func (s *Server) knowledge() (*retrieval.Service, error) {
	if s.retrieval == nil {
		return nil, apiErr(http.StatusNotFound, errcode.KnowledgeDisabled, "this server has no knowledge base")
	}
	return s.retrieval, nil
}

func (s *Server) createDocument(w http.ResponseWriter, r *http.Request) error {
	kb, err := s.knowledge()
	if err != nil {
		return err
	}
	raw, err := readBody(r)
	if err != nil {
		return err
	}
	body, err := native.DecodeDocument(raw, kb.MaxDocBytes())
	if err != nil {
		return err
	}
	if body.FileID != "" {
		if body, err = s.documentFromFile(r.Context(), body, kb.MaxDocBytes()); err != nil {
			return err
		}
	}
	d, err := kb.AddDocument(r.Context(), scopeOf(r.Context()), retrieval.DocumentInput{Source: body.Source, Collection: body.Collection,
		MediaType: body.MediaType, Text: body.Text, Metadata: body.Metadata})
	switch {
	case errors.Is(err, retrieval.ErrEmpty) && body.FileID != "":
		return apiErr(http.StatusUnprocessableEntity, errcode.InvalidField, "file %s has no text to index (a scanned PDF holds images of text only)", body.FileID)
	case errors.Is(err, retrieval.ErrEmpty):
		return apiErr(http.StatusUnprocessableEntity, errcode.InvalidField, "field \"text\" has no text to index")
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusCreated, viewDocument(d))
	return nil
}

// documentFromFile fills a document to index from the caller's stored file
// body.FileID: its text (a PDF's extracted), its name as the source unless
// one was given, and its id in the metadata, so what is retrieved says
// which file it came from.
func (s *Server) documentFromFile(ctx context.Context, body native.Document, maxBytes int) (native.Document, error) {
	fs, err := s.fileService()
	if err != nil {
		return native.Document{}, err
	}
	f, text, err := fs.Text(ctx, scopeOf(ctx), body.FileID, maxBytes+1)
	var none *file.NoTextError
	switch {
	case errors.As(err, &none) && none.Err != nil:
		return native.Document{}, apiErr(http.StatusUnprocessableEntity, errcode.InvalidField, "%s", none.Error())
	case errors.As(err, &none):
		return native.Document{}, &Error{Status: http.StatusUnsupportedMediaType, Code: errcode.UnsupportedFileType, Message: none.Error(),
			Extra: map[string]any{"mediaType": none.MediaType}}
	case err != nil:
		return native.Document{}, fileErr(err)
	case len(text) > maxBytes:
		return native.Document{}, apiErr(http.StatusRequestEntityTooLarge, errcode.DocumentTooLarge,
			"the text of file %s is larger than %d bytes; split it into several documents", f.Name, maxBytes)
	}
	meta := map[string]any{}
	if len(body.Metadata) > 0 {
		if err := json.Unmarshal(body.Metadata, &meta); err != nil {
			return native.Document{}, apiErr(http.StatusUnprocessableEntity, errcode.InvalidField, "field \"metadata\" must be an object")
		}
	}
	meta["fileId"] = f.ID
	body.Metadata, _ = json.Marshal(meta)
	body.Text = text
	if body.Source == "" {
		body.Source = f.Name
	}
	body.MediaType = "text/plain"
	if f.MediaType == "text/markdown" {
		body.MediaType = "text/markdown"
	}
	return body, nil
}

func (s *Server) listDocuments(w http.ResponseWriter, r *http.Request) error {
	kb, err := s.knowledge()
	if err != nil {
		return err
	}
	collection := r.URL.Query().Get("collection")
	list := func(ctx context.Context, sc chat.Scope, p store.Page) ([]store.Document, string, error) {
		return kb.Documents(ctx, sc, collection, p)
	}
	return writePage(w, r, "documents", list, viewDocument)
}

func (s *Server) getDocument(w http.ResponseWriter, r *http.Request) error {
	kb, err := s.knowledge()
	if err != nil {
		return err
	}
	d, err := kb.Document(r.Context(), scopeOf(r.Context()), r.PathValue("id"))
	if err != nil {
		return documentErr(err)
	}
	writeJSON(w, http.StatusOK, viewDocument(d))
	return nil
}

func (s *Server) deleteDocument(w http.ResponseWriter, r *http.Request) error {
	kb, err := s.knowledge()
	if err != nil {
		return err
	}
	if err := kb.DeleteDocument(r.Context(), scopeOf(r.Context()), r.PathValue("id")); err != nil {
		return documentErr(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// compactionView is the API shape of a compaction.
type compactionView struct {
	ID               string `json:"id"`
	ConversationID   string `json:"conversationId"`
	Summary          string `json:"summary"`
	ArchivedMessages int    `json:"archivedMessages"`
	ThroughMessageID string `json:"throughMessageId"`
	CreatedAt        string `json:"createdAt"`
}

func (s *Server) compact(w http.ResponseWriter, r *http.Request) error {
	if s.compactor == nil {
		return apiErr(http.StatusNotFound, errcode.CompactionDisabled, "this server does not compact conversations")
	}
	if err := decodeJSON(r, &struct{}{}, true); err != nil {
		return err
	}
	ctx, sc, id := r.Context(), scopeOf(r.Context()), r.PathValue("id")
	k, err := s.compactor.Compact(ctx, sc, id, "")
	var nn *compaction.NotNeededError
	switch {
	case errors.As(err, &nn):
		return &Error{Status: http.StatusConflict, Code: errcode.CompactionNotNeeded, Message: nn.Reason,
			Extra: map[string]any{"messages": nn.Messages, "minMessages": nn.Min}}
	case err != nil:
		return conversationErr(err)
	}
	writeJSON(w, http.StatusOK, compactionView{ID: k.ID, ConversationID: k.ConversationID, Summary: k.Summary,
		ArchivedMessages: k.Archived, ThroughMessageID: k.ThroughID, CreatedAt: dialect.Millis(k.CreatedAt)})
	return nil
}

func (s *Server) listArchive(w http.ResponseWriter, r *http.Request) error {
	if s.compactor == nil {
		return apiErr(http.StatusNotFound, errcode.CompactionDisabled, "this server does not compact conversations")
	}
	list := func(ctx context.Context, sc chat.Scope, p store.Page) ([]chat.Message, string, error) {
		return s.compactor.Archive(ctx, sc, r.PathValue("id"), p)
	}
	if err := writePage(w, r, "messages", list, native.MessageOf); err != nil {
		return conversationErr(err)
	}
	return nil
}
