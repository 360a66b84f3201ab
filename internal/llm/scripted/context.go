package scripted

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/agentchat/agentchat/internal/llm"
)

// Prefixes the offline model recognises in system messages. They are the
// first words of what the retrieval and compaction packages send.
const (
	retrievalPrefix = "Retrieved context"
	summaryPrefix   = "Summarise the conversation"
)

// promptRe asks the offline model to show its system prompt.
var promptRe = regexp.MustCompile(`(?i)system prompt|系统提示词`)

// contextAnswer answers from retrieval context or shows the system prompt,
// when the request asks for one of them; ok is false otherwise.
func contextAnswer(req llm.Request, userText string) (string, bool) {
	if promptRe.MatchString(userText) {
		if len(req.Messages) > 0 && req.Messages[0].Role == llm.RoleSystem && !strings.HasPrefix(req.Messages[0].Content, retrievalPrefix) {
			return "My system prompt is:\n\n" + req.Messages[0].Content, true
		}
		return "I have no system prompt.", true
	}
	for _, m := range req.Messages {
		if m.Role != llm.RoleSystem || !strings.HasPrefix(m.Content, retrievalPrefix) {
			continue
		}
		// The first hit: "[1] source: S\ncontent…" after the header.
		_, first, ok := strings.Cut(m.Content, "\n\n[1] source: ")
		if !ok {
			continue
		}
		first, _, _ = strings.Cut(first, "\n\n[2] source: ")
		source, content, _ := strings.Cut(first, "\n")
		return fmt.Sprintf("According to [1] %s: %s", source, clip(oneLine(content), 200)), true
	}
	return "", false
}

// summary is the offline model's deterministic summary of a conversation
// given to it for compaction: the count of messages, then each user message
// and the last assistant answer, clipped.
func summary(req llm.Request) string {
	var users []string
	var lastAnswer string
	n := 0
	for _, m := range req.Messages[1:] {
		for _, line := range strings.Split(m.Content, "\n") {
			role, text, ok := strings.Cut(line, ": ")
			if !ok {
				continue
			}
			switch role {
			case "user":
				n++
				users = append(users, clip(oneLine(text), 80))
			case "assistant":
				n++
				lastAnswer = clip(oneLine(text), 120)
			case "tool", "summary":
				n++
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Summary of %s.", plural(n, "earlier message"))
	if len(users) > 0 {
		b.WriteString(" The user said: " + strings.Join(users, "; ") + ".")
	}
	if lastAnswer != "" {
		b.WriteString(" The last answer was: " + lastAnswer)
	}
	return b.String()
}

// chartRe asks for make_chart; numberRe finds its values.
var (
	chartRe  = regexp.MustCompile(`(?i)\bchart\b|图表`)
	numberRe = regexp.MustCompile(`-?\d+(?:\.\d+)?`)
)

// chartTitle is the first quoted text of the chart's clause, else of the
// whole text, else "Chart".
func chartTitle(clause, text string) string {
	for _, s := range []string{clause, text} {
		if m := quoteRe.FindStringSubmatch(s); m != nil {
			for _, g := range m[1:] {
				if g != "" {
					return g
				}
			}
		}
	}
	return "Chart"
}

// chartValues finds the numbers a chart request asks for: those of the
// chart's own clause, from its phrase at chartAt to the next phrase of
// another call, outside quotes (a title such as "Q3 2024" is no value). A
// clause with none falls back to the text before the phrase, back to the
// previous call's phrase, without the calculator's expression. Numbers
// that belong to another request never reach the chart.
func chartValues(text string, chartAt int, others []call) (string, []string) {
	start, end := 0, len(text)
	for _, c := range others {
		if c.at > chartAt && c.at < end {
			end = c.at
		}
		if c.at < chartAt && c.at > start {
			start = c.at
		}
	}
	clause := text[chartAt:end]
	if nums := numberRe.FindAllString(quoteRe.ReplaceAllString(clause, ""), -1); len(nums) > 0 {
		return clause, nums
	}
	before := text[start:chartAt]
	for _, c := range others {
		if e := c.args["expression"]; c.name == ToolCalculator && e != "" {
			before = strings.Replace(before, e, "", 1)
		}
	}
	return clause, numberRe.FindAllString(quoteRe.ReplaceAllString(before, ""), -1)
}
