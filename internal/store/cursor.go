package store

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
)

// Cursor is the position after which a page continues: a time and an id,
// because ids alone do not order rows whose times were set by clients or moved.
type Cursor struct {
	At time.Time
	ID string
}

// EncodeCursor makes an opaque page token. It is not a secret: scoping, not the
// cursor, protects other principals' rows.
func EncodeCursor(c Cursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.At.UnixMilli(), 10) + ":" + c.ID))
}

// maxCursorMillis is the last millisecond of the year 9999.
const maxCursorMillis = 253402300799999

// DecodeCursor reads a token made by EncodeCursor; "" is the first page.
func DecodeCursor(s string) (Cursor, bool, error) {
	if s == "" {
		return Cursor{}, false, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, false, ErrBadCursor
	}
	ms, id, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(ms, 10, 64)
	// Every backend must be able to compare the cursor with its rows: the
	// time is one a database holds (1970 to 9999) and the id is text.
	if !ok || err != nil || id == "" || n < 0 || n > maxCursorMillis || !chat.ValidText(id) {
		return Cursor{}, false, ErrBadCursor
	}
	return Cursor{At: time.UnixMilli(n).UTC(), ID: id}, true, nil
}

// NextPage cuts rows, read with a limit of one more than the page's so that
// a following page shows itself, to limit, and returns the cursor of the
// page after them ("" when there is none). key is a row's position in the
// list's order.
func NextPage[T any](rows []T, limit int, key func(T) Cursor) ([]T, string) {
	if len(rows) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	return rows, EncodeCursor(key(rows[len(rows)-1]))
}
