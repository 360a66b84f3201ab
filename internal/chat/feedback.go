package chat

import "time"

// Feedback ratings.
const (
	RatingUp   = "up"
	RatingDown = "down"
)

// Feedback is a person's rating of a message of their conversation.
type Feedback struct {
	MessageID      string
	ConversationID string
	Tenant         string
	// Owner is the conversation's owner, who gave it.
	Owner string
	// RunID and AgentID are the run that wrote the message and its agent
	// (empty for a message of no run), recorded for review.
	RunID     string
	AgentID   string
	Rating    string
	Comment   string
	Tags      []string
	CreatedAt time.Time
	UpdatedAt time.Time
}
