package lifecycle

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestReleaseGateIsTheOnlyCharge reads the three systems' sources: none of
// them charges a ledger, asks a release.Values for a value, or builds a
// release.Gate or release.Values itself, so every charge —
// and with it every value that leaves an owner — goes through
// Session.Release (spend and fsync, then send). A direct call of Spend or
// Charge, or a release.Gate, is named with its file and line.
func TestReleaseGateIsTheOnlyCharge(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	for _, dir := range []string{"../session", "../fedboost", "../pfds"} {
		paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range paths {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files++
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.CompositeLit); ok {
					if sel, ok := lit.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Values" {
						if x, ok := sel.X.(*ast.Ident); ok && x.Name == "release" {
							t.Errorf("%s: builds a release.Values outside the lifecycle (role.NewValues makes an owner's gate)", fset.Position(sel.Pos()))
						}
					}
				}
				if call, ok := n.(*ast.CallExpr); ok {
					// release.Values.Value(name, charge, input, make)
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Value" && len(call.Args) == 4 {
						t.Errorf("%s: asks the release gate for a value outside the lifecycle's Release", fset.Position(sel.Pos()))
					}
				}
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				x, _ := sel.X.(*ast.Ident)
				pkg := x != nil && x.Name == "release"
				if pkg && sel.Sel.Name == "Gate" {
					t.Errorf("%s: builds a release.Gate outside the lifecycle", fset.Position(sel.Pos()))
				}
				if !pkg && (sel.Sel.Name == "Spend" || sel.Sel.Name == "Charge") {
					t.Errorf("%s: calls %s outside the lifecycle's Release", fset.Position(sel.Pos()), sel.Sel.Name)
				}
				return true
			})
		}
	}
	if files < 15 {
		t.Fatalf("read %d files: the systems' sources were not found", files)
	}
}
