package dialect

import (
	"net/url"
	"strings"
)

// FileIDOf reads the file id from a URL of a file's content route
// (/v1/files/{id}/content, relative or absolute, with or without a query):
// a client sending back a file of history, or one it uploaded first,
// names it so. ok is false for any other URL.
func FileIDOf(raw string) (id string, ok bool) {
	if strings.HasPrefix(raw, "data:") {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", false
	}
	rest, found := strings.CutPrefix(u.Path, "/v1/files/")
	if !found {
		return "", false
	}
	id, found = strings.CutSuffix(rest, "/content")
	if !found || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}
