package local

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/file"
	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/store"
)

// FileReader reads an attached file of the run's principal (file.Service).
type FileReader interface {
	Read(ctx context.Context, sc chat.Scope, id string) (store.File, []byte, error)
}

// MaxTextFileChars caps the text of one attached text file the model sees;
// beyond it the text is cut with a visible marker.
const MaxTextFileChars = 100_000

// modelParts turns a stored message's parts into the model's: text and
// URL images as they are, files as PartFile placeholders (their id in
// Text) that loadFiles fills in.
func modelParts(parts []chat.Part) []llm.Part {
	out := make([]llm.Part, 0, len(parts))
	for _, p := range parts {
		switch p.Type {
		case chat.PartText:
			out = append(out, llm.Part{Type: llm.PartText, Text: p.Text})
		case chat.PartImage:
			out = append(out, llm.Part{Type: llm.PartImageURL, ImageURL: p.ImageURL})
		case chat.PartFile:
			out = append(out, llm.Part{Type: llm.PartFile, Text: p.FileID, Name: p.Name, MediaType: p.MediaType})
		}
	}
	return out
}

// loadFiles replaces each file placeholder with what the model
// understands: an image's bytes, a PDF's bytes (and its text, for models
// that read no PDFs), a text file's text (capped, marked when cut). A file
// that cannot be read any more (deleted) becomes a note saying so.
func (r *runner) loadFiles(ctx context.Context, msgs []llm.Message) []llm.Message {
	for i, m := range msgs {
		for j, p := range m.Parts {
			if p.Type != llm.PartFile {
				continue
			}
			msgs[i].Parts[j] = r.loadFile(ctx, p)
		}
	}
	return msgs
}

func (r *runner) loadFile(ctx context.Context, p llm.Part) llm.Part {
	missing := llm.Part{Type: llm.PartText, Text: fmt.Sprintf("[The attached file %q is no longer available.]", p.Name)}
	if r.a.files == nil {
		return missing
	}
	f, b, err := r.a.files.Read(ctx, r.t.Scope, p.Text)
	if err != nil {
		r.log.WarnContext(ctx, "attached file not read", "file_id", p.Text, "err", err)
		return missing
	}
	switch file.KindOf(f.MediaType) {
	case file.KindImage:
		return llm.Part{Type: llm.PartImage, Name: f.Name, MediaType: f.MediaType, Data: b}
	case file.KindDocument:
		text, _ := file.PDFText(b, MaxTextFileChars)
		return llm.Part{Type: llm.PartDocument, Name: f.Name, MediaType: f.MediaType, Data: b, Text: text}
	case file.KindText:
		return llm.Part{Type: llm.PartText, Name: f.Name, Text: textFile(f.Name, b)}
	}
	return llm.Part{Type: llm.PartDocument, Name: f.Name, MediaType: f.MediaType, Data: b}
}

// textFile is a text file as the model reads it: named, and cut at
// MaxTextFileChars with a marker saying how much was left out.
func textFile(name string, b []byte) string {
	s := string(b)
	if !utf8.ValidString(s) {
		s = string([]rune(s)) // invalid bytes become U+FFFD
	}
	head := fmt.Sprintf("[Attached file %q]\n", name)
	if n := utf8.RuneCountInString(s); n > MaxTextFileChars {
		return head + string([]rune(s)[:MaxTextFileChars]) + fmt.Sprintf("\n[… truncated: %d of %d characters shown]", MaxTextFileChars, n)
	}
	return head + s
}
