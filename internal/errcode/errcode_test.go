package errcode_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// codes reads the constants of errcode.go: name → value.
func codes(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "errcode.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s is not a string literal", name)
				}
				out[name.Name], _ = strconv.Unquote(lit.Value)
			}
		}
	}
	return out
}

// TestCodes: every code is snake_case and means one thing.
func TestCodes(t *testing.T) {
	t.Parallel()
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	seen := map[string]string{}
	for name, code := range codes(t) {
		if !snake.MatchString(code) {
			t.Errorf("%s = %q is not snake_case", name, code)
		}
		if other, dup := seen[code]; dup {
			t.Errorf("%s and %s are both %q", name, other, code)
		}
		seen[code] = name
	}
}

// TestWrittenOnce: outside this package, no server code spells a wire code
// as a string literal; it names the constant. Tests and test-helper
// packages (…test) may spell codes out: they pin the wire. So may the fake
// provider upstreams, whose codes are the providers', not ours, and an
// error's own text (errors.New("conflict") is a message, not a code).
func TestWrittenOnce(t *testing.T) {
	t.Parallel()
	byValue := map[string]string{}
	for name, code := range codes(t) {
		byValue[code] = name
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	skip := map[string]bool{"internal/errcode": true, "internal/llm/fakeupstream": true}
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			name := d.Name()
			if skip[filepath.ToSlash(rel)] || strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata" ||
				(strings.HasSuffix(name, "test") && path != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ImportSpec, *ast.Field: // import paths; struct tags
				return false
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
					if pkg, ok := sel.X.(*ast.Ident); ok && (pkg.Name == "errors" && sel.Sel.Name == "New" || pkg.Name == "fmt" && sel.Sel.Name == "Errorf") {
						return false
					}
				}
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				if s, err := strconv.Unquote(n.Value); err == nil {
					if name, ok := byValue[s]; ok {
						t.Errorf("%s: %q is a wire error code: use errcode.%s", fset.Position(n.Pos()), s, name)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d files under %s: is this the module?", files, root)
	}
}
