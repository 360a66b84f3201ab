package retrieval

import (
	"strings"
	"unicode"
)

// Terms splits text into the tokens both the index and the queries use, on
// every backend: lower-cased runs of letters and digits for alphabetic
// scripts, and overlapping bigrams for CJK text (中文检索 → 中文 文检 检索), since
// neither SQLite FTS5's unicode61 tokenizer nor PostgreSQL's parsers split
// Chinese, Japanese or Korean into words. A CJK run of one character is kept
// as it is. Tokens keep their order and may repeat (ranking counts them).
func Terms(text string) []string {
	var out []string
	var word []rune
	var cjk []rune
	flushWord := func() {
		if len(word) > 0 {
			out = append(out, string(word))
			word = word[:0]
		}
	}
	flushCJK := func() {
		switch len(cjk) {
		case 0:
		case 1:
			out = append(out, string(cjk))
		default:
			for i := 0; i+1 < len(cjk); i++ {
				out = append(out, string(cjk[i:i+2]))
			}
		}
		cjk = cjk[:0]
	}
	for _, r := range text {
		switch {
		case isCJK(r):
			flushWord()
			cjk = append(cjk, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			flushCJK()
			word = append(word, unicode.ToLower(r))
		default:
			flushWord()
			flushCJK()
		}
	}
	flushWord()
	flushCJK()
	return out
}

// isCJK reports whether r belongs to a script written without spaces between words.
func isCJK(r rune) bool {
	// ー (the prolonged sound mark) and 々 (the iteration mark) belong to the
	// Common script but are written inside Japanese words.
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r) ||
		r == 'ー' || r == '々'
}

// IndexText is the pre-tokenised form of text that a backend indexes.
func IndexText(text string) string { return strings.Join(Terms(text), " ") }

// stopwords are frequent English words that would match nearly every chunk;
// queries drop them (the index keeps them, it costs little).
var stopwords = map[string]bool{
	"a": true, "an": true, "the": true, "is": true, "are": true, "was": true, "were": true, "be": true,
	"of": true, "to": true, "in": true, "on": true, "for": true, "and": true, "or": true, "with": true,
	"what": true, "how": true, "who": true, "which": true, "do": true, "does": true, "did": true,
	"i": true, "you": true, "it": true, "me": true, "my": true, "we": true, "our": true, "can": true,
	"about": true, "tell": true, "please": true, "this": true, "that": true, "at": true, "by": true,
}

// QueryTerms are the distinct terms of a question, stopwords dropped, at most 32.
func QueryTerms(q string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range Terms(q) {
		if seen[t] || stopwords[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
		if len(out) == 32 {
			break
		}
	}
	return out
}
