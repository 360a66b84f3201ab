package file

import (
	"mime"
	"net/http"
	"path"
	"strings"
)

// DefaultTypes are the media types an upload may have unless configured:
// images a vision model reads, PDFs, and text.
var DefaultTypes = []string{
	"image/png", "image/jpeg", "image/gif", "image/webp",
	"application/pdf",
	"text/plain", "text/markdown", "text/csv", "application/json",
}

// Sniff names the media type of a file from its first bytes (up to 512),
// never from what a client claims: http.DetectContentType's algorithm (the
// WHATWG one browsers use), so what is served is what a browser would see.
// Text it cannot tell apart (text/plain) is refined by the name's extension
// into Markdown, CSV or JSON; a name never turns bytes into an image, a PDF,
// or HTML.
func Sniff(head []byte, name string) string {
	mt, _, _ := mime.ParseMediaType(http.DetectContentType(head))
	if mt != "text/plain" {
		return mt
	}
	switch strings.ToLower(path.Ext(name)) {
	case ".md", ".markdown":
		return "text/markdown"
	case ".csv":
		return "text/csv"
	case ".json":
		return "application/json"
	}
	return mt
}

// Kind is how a model is given a file.
type Kind string

// The kinds.
const (
	KindImage    Kind = "image"
	KindDocument Kind = "document" // PDF
	KindText     Kind = "text"
	KindOther    Kind = "other"
)

// KindOf says how a file of media type mt reaches a model.
func KindOf(mt string) Kind {
	switch {
	case strings.HasPrefix(mt, "image/"):
		return KindImage
	case mt == "application/pdf":
		return KindDocument
	case strings.HasPrefix(mt, "text/"), mt == "application/json":
		return KindText
	}
	return KindOther
}

// unnamed is the name of a file that came without one.
const unnamed = "file"

// extensions name an unnamed file by its sniffed media type.
var extensions = map[string]string{
	"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp", "application/pdf": ".pdf",
	"text/plain": ".txt", "text/markdown": ".md", "text/csv": ".csv", "application/json": ".json",
}

// CleanName keeps a client's file name printable and without directories,
// at most 255 bytes; "file" when nothing is left.
func CleanName(name string) string {
	name = strings.ReplaceAll(name, `\`, "/")
	name = path.Base(name)
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' {
			return -1
		}
		return r
	}, strings.ToValidUTF8(name, ""))
	name = strings.TrimSpace(name)
	if name == "" || name == "." || name == "/" || name == ".." {
		return unnamed
	}
	for len(name) > 255 {
		_, size := lastRune(name)
		name = name[:len(name)-size]
	}
	return name
}

func lastRune(s string) (rune, int) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i]&0xC0 != 0x80 {
			return rune(s[i]), len(s) - i
		}
	}
	return 0, 1
}
