package chat_test

import (
	"testing"

	"github.com/agentchat/agentchat/internal/chat"
)

func TestValidText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s    string
		want bool
	}{
		{"", true},
		{"plain", true},
		{"astral 😀, noncharacter \uFFFF, control \x01, replacement \uFFFD", true},
		{"nul \x00 inside", false},
		{"\x00", false},
		{"invalid \xff byte", false},
		{"cut \xe2\x82", false},
		{"surrogate \xed\xa0\x80", false},
	}
	for _, tt := range tests {
		if got := chat.ValidText(tt.s); got != tt.want {
			t.Errorf("ValidText(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}
