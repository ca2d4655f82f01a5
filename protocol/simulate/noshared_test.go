package simulate

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The sharing that large simulations need is injected (share.go); the app
// packages keep no process-global state that owners of one process could
// share, and no package of the protocol imports unsafe. This reads their
// sources: every package-level variable of session, securesum, fedboost,
// pfds and protocol must be a sentinel error (errors.New), and no file may
// import unsafe. (A cache like the ones issue 22 removed — a package-level
// map keyed by pointers — fails it, naming file and line.)
func TestNoProcessGlobalStateInApps(t *testing.T) {
	dirs := []string{"..", "../session", "../securesum", "../fedboost", "../pfds", "../release", "../wire"}
	fset := token.NewFileSet()
	checked := 0
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, ".pb.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for _, imp := range f.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); p == "unsafe" {
					t.Errorf("%s imports unsafe", fset.Position(imp.Pos()))
				}
			}
			for _, decl := range f.Decls {
				g, ok := decl.(*ast.GenDecl)
				if !ok || g.Tok != token.VAR {
					continue
				}
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if name.Name == "_" || (i < len(vs.Values) && isSentinel(vs.Values[i])) {
							continue
						}
						t.Errorf("%s: package-level variable %s is state every owner of a process would share",
							fset.Position(name.Pos()), name.Name)
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d files read: wrong directories?", checked)
	}
}

// isSentinel reports whether e is errors.New("...").
func isSentinel(e ast.Expr) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	s, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := s.X.(*ast.Ident)
	return ok && x.Name == "errors" && s.Sel.Name == "New"
}
