package run

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/file"
	"github.com/agentchat/agentchat/internal/store"
)

// ErrFilesDisabled: a message attaches files, and the server stores none.
var ErrFilesDisabled = errors.New("this server stores no files")

// UnsupportedFileError: an attached file is of a type the run's model cannot take.
type UnsupportedFileError struct {
	MediaType string
	Model     string
}

func (e *UnsupportedFileError) Error() string {
	return fmt.Sprintf("files of type %s cannot be given to the model %s", e.MediaType, e.Model)
}

// attach makes a new user message's parts reference stored files only: a
// part naming a file id must name one of sc's files (its name, media type
// and size are filled in), and a part carrying a data: or http(s) URL (an
// AI SDK or AG-UI file, an image by URL) is stored as a file first, its
// URL fetched once through the SSRF guard. What is stored, and what any
// model later receives, never holds the bytes or a URL back to agentchat.
// It returns the parts as they are stored and the files they reference.
//
// A file that is not an image, a PDF or text is refused unless the run's
// model accepts its type (the models file's accepts).
func (s *Service) attach(ctx context.Context, sc chat.Scope, parts []chat.Part, ag *engine.Agent) ([]chat.Part, []string, error) {
	var ids []string
	for i, p := range parts {
		if p.Type == chat.PartImage {
			if s.cfg.Files == nil {
				continue // no file storage: the URL goes to the model as before files
			}
			// An image by URL, as clients sent before files: stored like any file.
			p = chat.Part{Type: chat.PartFile, URL: p.ImageURL}
		}
		if p.Type != chat.PartFile {
			continue
		}
		if s.cfg.Files == nil {
			return nil, nil, ErrFilesDisabled
		}
		var f store.File
		var err error
		if p.FileID != "" {
			f, err = s.cfg.Files.Get(ctx, sc, p.FileID)
			if errors.Is(err, store.ErrNotFound) {
				return nil, nil, &AttachmentNotFoundError{FileID: p.FileID}
			}
		} else {
			f, err = s.cfg.Files.FromURL(ctx, sc, p.URL, p.Name)
		}
		if err != nil {
			return nil, nil, err
		}
		if file.KindOf(f.MediaType) == file.KindOther && !accepts(ag, f.MediaType) {
			model := ""
			if ag != nil {
				model = ag.ModelName
			}
			return nil, nil, &UnsupportedFileError{MediaType: f.MediaType, Model: cmpModel(model)}
		}
		parts[i] = chat.Part{Type: chat.PartFile, FileID: f.ID, Name: f.Name, MediaType: f.MediaType, Size: f.Size}
		ids = append(ids, f.ID)
	}
	return parts, ids, nil
}

// accepts reports whether the agent's model takes files of media type mt
// beyond images, PDFs and text: an exact entry, or its family ("audio/*").
func accepts(ag *engine.Agent, mt string) bool {
	if ag == nil {
		return false
	}
	family, _, _ := strings.Cut(mt, "/")
	for _, a := range ag.Accepts {
		if a == mt || a == family+"/*" {
			return true
		}
	}
	return false
}

func cmpModel(name string) string {
	if name == "" {
		return "this server's default model"
	}
	return name
}

// AttachmentNotFoundError: a message names a file that is not the sender's.
type AttachmentNotFoundError struct{ FileID string }

func (e *AttachmentNotFoundError) Error() string {
	return "attachment " + e.FileID + " not found"
}

func (e *AttachmentNotFoundError) Unwrap() error { return store.ErrNotFound }
