package chat

// A conversation's messages form a tree: each names the message it follows
// (ParentID, "" for a first message). Editing a user message adds a sibling
// under the same parent, regenerating an answer a sibling answer; the
// conversation's active leaf picks the branch its history, and its next
// run's context, are made of. These functions read the tree from a
// conversation's messages, oldest first (as stores list them).

// Branch returns the messages from the root down to leaf, oldest first; none
// when leaf is "" or not among msgs. A parent missing from msgs (archived
// before the tree existed) ends the walk.
func Branch(msgs []Message, leaf string) []Message {
	byID := make(map[string]int, len(msgs))
	for i, m := range msgs {
		byID[m.ID] = i
	}
	var path []Message
	for id, steps := leaf, 0; id != "" && steps <= len(msgs); steps++ {
		i, ok := byID[id]
		if !ok {
			break
		}
		path = append(path, msgs[i])
		id = msgs[i].ParentID
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path
}

// Siblings maps each message's id to the ids of the messages that share its
// parent, itself included, in creation order.
func Siblings(msgs []Message) map[string][]string {
	byParent := map[string][]string{}
	for _, m := range msgs {
		byParent[m.ParentID] = append(byParent[m.ParentID], m.ID)
	}
	out := make(map[string][]string, len(msgs))
	for _, m := range msgs {
		out[m.ID] = byParent[m.ParentID]
	}
	return out
}

// LatestDescendant is the most recently created message of the subtree
// under id (id itself when nothing follows it): the leaf that switching to
// the branch through id makes active.
func LatestDescendant(msgs []Message, id string) string {
	in := map[string]bool{id: true}
	leaf := id
	for _, m := range msgs { // oldest first: a parent precedes its children
		if m.ID != id && in[m.ParentID] {
			in[m.ID] = true
			leaf = m.ID
		}
	}
	return leaf
}

// RunLeaf is where run r's branch ends: its latest message, else the message
// it began from (r.ParentID).
func RunLeaf(msgs []Message, r Run) string {
	leaf := r.ParentID
	for _, m := range msgs {
		if m.RunID == r.ID {
			leaf = m.ID
		}
	}
	return leaf
}

// AnsweredBy is the user message that the answer id answers: id itself when
// it is a user message, else its nearest user ancestor ("" when none).
func AnsweredBy(msgs []Message, id string) (Message, bool) {
	path := Branch(msgs, id)
	for i := len(path) - 1; i >= 0; i-- {
		if path[i].Role == RoleUser {
			return path[i], true
		}
	}
	return Message{}, false
}
