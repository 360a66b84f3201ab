package httpapi

// What text agentchat accepts is decided where requests enter:
// chat.ValidText (UTF-8 without NUL) for every string of a JSON body (the
// dialects' decoders, dialect.DecodeJSON: keys included, escapes decoded,
// \u0000 and unpaired surrogates refused rather than mended into U+FFFD),
// every query parameter and the principal of a token; anything else is a
// 400 naming the field (401 for a token). Ids in paths
// are checked against the shape every stored id has (possibleID): one that
// cannot exist is an unknown id, 404, and never reaches a store.

import (
	"net/http"
	"regexp"
	"strconv"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect"
)

// idPattern is the shape of every id a client can name an object by: the
// server's UUIDs, and the chat and thread ids clients choose (which are
// checked against it, or a subset of it, before they name anything).
var idPattern = regexp.MustCompile(`^[A-Za-z0-9._:~-]{1,128}$`)

// possibleID reports whether id could name a stored object.
func possibleID(id string) bool { return idPattern.MatchString(id) }

// checkQueryText refuses a request whose query holds a name or value that
// is not text.
func checkQueryText(r *http.Request) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	for k, vs := range r.URL.Query() {
		if !chat.ValidText(k) {
			return dialect.TextError("a query parameter name")
		}
		for _, v := range vs {
			if !chat.ValidText(v) {
				return dialect.TextError("query parameter " + strconv.Quote(k))
			}
		}
	}
	return nil
}
