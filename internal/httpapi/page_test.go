package httpapi

import (
	"net/http/httptest"
	"testing"

	"github.com/agentchat/agentchat/internal/dialect/native"
)

// TestPageBody pins a list page's bytes: the items under the list's name,
// then nextCursor (absent on the last page) and hasMore, written like every
// other body (no HTML escaping).
func TestPageBody(t *testing.T) {
	t.Parallel()
	items := []native.Conversation{{ID: "c1", Title: "<b>Q&A</b>", CreatedAt: "1", UpdatedAt: "2"}}
	for _, tc := range []struct {
		items []native.Conversation
		next  string
		want  string
	}{
		{items, "", `{"conversations":[{"id":"c1","title":"<b>Q&A</b>","createdAt":"1","updatedAt":"2"}],"hasMore":false}` + "\n"},
		{items, "abc", `{"conversations":[{"id":"c1","title":"<b>Q&A</b>","createdAt":"1","updatedAt":"2"}],"nextCursor":"abc","hasMore":true}` + "\n"},
		{[]native.Conversation{}, "", `{"conversations":[],"hasMore":false}` + "\n"},
	} {
		w := httptest.NewRecorder()
		writeJSON(w, 200, pageBody[native.Conversation]{name: "conversations", items: tc.items, next: tc.next})
		if got := w.Body.String(); got != tc.want {
			t.Errorf("page body\n got %s\nwant %s", got, tc.want)
		}
	}
}
