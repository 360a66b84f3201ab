package llm

// SplitTokens splits s the way models stream text: each word with its
// leading spaces, so joining the pieces gives s back. The offline model
// streams this way, and the fake upstreams use it to script replies.
func SplitTokens(s string) []string {
	var out []string
	start := 0
	for i := 1; i < len(s); i++ {
		if s[i] == ' ' && s[i-1] != ' ' {
			out = append(out, s[start:i])
			start = i
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
