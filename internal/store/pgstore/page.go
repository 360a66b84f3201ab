package pgstore

import (
	"fmt"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// keysetPage reads one page of a list in the order of store.Cursor: by the
// time column at, then id, newest first when desc. q selects the list's rows
// up to the end of its WHERE clause (args hold its parameters); keysetPage
// adds the rows after p's cursor, the order and the limit, and read runs
// the completed query. A cursor no backend issued is store.ErrBadCursor;
// read's errors are returned as they are.
func keysetPage[T any](q string, args []any, at string, desc bool, p store.Page,
	key func(T) store.Cursor, read func(q string, args []any) ([]T, error)) ([]T, string, error) {
	cur, ok, err := store.DecodeCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	after, dir := ">", ""
	if desc {
		after, dir = "<", " DESC"
	}
	if ok {
		// A row comparison, which an index ending in (at, id) serves as a range.
		q += fmt.Sprintf(` AND (%s, id) %s ($%d, $%d)`, at, after, len(args)+1, len(args)+2)
		args = append(args, cur.At, cur.ID)
	}
	q += fmt.Sprintf(` ORDER BY %s%s, id%s LIMIT $%d`, at, dir, dir, len(args)+1)
	args = append(args, p.Limit+1)
	rows, err := read(q, args)
	if err != nil {
		return nil, "", err
	}
	rows, next := store.NextPage(rows, p.Limit, key)
	return rows, next, nil
}

// messageCursor is a message's place in the order of its conversation (and its archive).
func messageCursor(m chat.Message) store.Cursor { return store.Cursor{At: m.CreatedAt, ID: m.ID} }
