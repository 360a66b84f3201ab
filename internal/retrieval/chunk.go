package retrieval

import (
	"strings"
	"unicode/utf8"
)

// Split cuts a document into chunks of at most size characters, along
// paragraph boundaries where it can (a Markdown heading always starts a new
// chunk, so a section's text stays with its title), and along sentence ends
// or hard cuts inside an overlong paragraph.
func Split(text string, size int) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var chunks []string
	var cur strings.Builder
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			chunks = append(chunks, s)
		}
		cur.Reset()
	}
	for _, para := range strings.Split(text, "\n\n") {
		para = strings.TrimSpace(para)
		if para == "" {
			continue
		}
		if strings.HasPrefix(para, "#") {
			flush()
		}
		for _, piece := range pieces(para, size) {
			if cur.Len() > 0 && utf8.RuneCountInString(cur.String())+2+utf8.RuneCountInString(piece) > size {
				flush()
			}
			if cur.Len() > 0 {
				cur.WriteString("\n\n")
			}
			cur.WriteString(piece)
		}
	}
	flush()
	return chunks
}

// pieces cuts one paragraph into parts of at most size characters, after a
// sentence end when there is one in the second half of the window.
func pieces(p string, size int) []string {
	var out []string
	r := []rune(p)
	for len(r) > size {
		cut := size
		for i := size - 1; i > size/2; i-- {
			if strings.ContainsRune(".!?。！？;；\n", r[i]) {
				cut = i + 1
				break
			}
		}
		out = append(out, strings.TrimSpace(string(r[:cut])))
		r = r[cut:]
	}
	if s := strings.TrimSpace(string(r)); s != "" {
		out = append(out, s)
	}
	return out
}
