package dialect_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsStayBelow holds the dialects, their tests and their test
// helpers to the packages below them: the event model, the shared domain,
// the wire error codes, the SSE parser and the JSON string writer. A dialect that imports the store, the run service or
// HTTP handling would let a wire format reach past the events it encodes.
func TestImportsStayBelow(t *testing.T) {
	t.Parallel()
	const module = "github.com/agentchat/agentchat/"
	allowed := []string{
		"internal/dialect", // the framing and every format beside each other
		"internal/event",
		"internal/chat",
		"internal/errcode",
		"internal/uischema",
		"internal/ssetest",
		"internal/jsonstr", // a leaf: JSON strings without reflection
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			rel, ours := strings.CutPrefix(p, module)
			if !ours {
				continue
			}
			ok := false
			for _, a := range allowed {
				ok = ok || rel == a || strings.HasPrefix(rel, a+"/")
			}
			if !ok {
				t.Errorf("%s imports %s: a dialect knows only events, the chat domain, error codes, SSE and JSON strings", filepath.Join("internal/dialect", path), rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
