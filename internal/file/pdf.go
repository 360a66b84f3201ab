package file

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// PDFText extracts a PDF's text with a pure-Go reader (github.com/ledongthuc/pdf,
// a maintained fork of rsc.io/pdf), at most maxChars characters. A PDF it
// cannot read (encrypted, malformed, scanned images only) is an error; a
// panic of the parser on hostile bytes is one too.
func PDFText(b []byte, maxChars int) (text string, err error) {
	defer func() {
		if p := recover(); p != nil {
			text, err = "", fmt.Errorf("pdf: unreadable: %v", p)
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return "", fmt.Errorf("pdf: %w", err)
	}
	tr, err := r.GetPlainText()
	if err != nil {
		return "", fmt.Errorf("pdf: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(tr, int64(maxChars)*4+4))
	if err != nil {
		return "", fmt.Errorf("pdf: %w", err)
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(raw), ""))
	if utf8.RuneCountInString(s) > maxChars {
		s = string([]rune(s)[:maxChars])
	}
	return s, nil
}
