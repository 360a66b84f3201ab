package retrieval

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/store"
)

func TestTerms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"退货政策是什么", "退货 货政 政策 策是 是什 什么"},
		{"Hello, World! 42", "hello world 42"},
		{"用Go写的agentchat服务", "用 go 写的 agentchat 服务"},
		{"東京タワー", "東京 京タ タワ ワー"},
		{"한국어 검색", "한국 국어 검색"},
		{"", ""},
		{"a-b_c", "a b c"},
	} {
		if got := IndexText(tc.in); got != tc.want {
			t.Errorf("IndexText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := fmt.Sprint(QueryTerms("What is the refund policy? refund")); got != "[refund policy]" {
		t.Errorf("QueryTerms: %s", got)
	}
}

func TestSplit(t *testing.T) {
	t.Parallel()
	doc := "# Title\n\nIntro paragraph.\n\n## Section\n\n" + strings.Repeat("句子。", 100)
	chunks := Split(doc, 120)
	if len(chunks) < 3 || chunks[0] != "# Title\n\nIntro paragraph." || !strings.HasPrefix(chunks[1], "## Section") {
		t.Fatalf("chunks %q", chunks)
	}
	for _, c := range chunks {
		if n := len([]rune(c)); n > 120 {
			t.Fatalf("chunk of %d runes", n)
		}
	}
	if got := Split(" \n\n \r\n", 100); len(got) != 0 {
		t.Fatalf("blank: %q", got)
	}
}

func TestFuse(t *testing.T) {
	t.Parallel()
	p := func(id string) store.Passage { return store.Passage{ChunkID: id} }
	hits := fuse(2, []store.Passage{p("a"), p("b"), p("c")}, []store.Passage{p("c"), p("b")})
	// c: 1/61 + 1/63 beats b: 2/62, and a (1/61 alone).
	if len(hits) != 2 || hits[0].ChunkID != "c" || hits[1].ChunkID != "b" {
		t.Fatalf("fused %+v", hits)
	}
	if c := cosine([]float32{1, 0}, []float32{0, 1}); c != 0 {
		t.Fatalf("cosine %v", c)
	}
}
