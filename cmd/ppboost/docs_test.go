package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackageSaysWhereItSits: every Go package of the module has a
// package comment with a "Where it sits:" paragraph (what it imports, who
// uses it, what it must not do), so a newcomer can place any package from
// its doc alone (issue 22, item 6). It names the packages that lack one.
func TestEveryPackageSaysWhereItSits(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	checked := 0
	dirs := map[string]bool{}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, _ error) error {
		if d != nil && d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "results" || d.Name() == "python") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			dirs[filepath.Dir(path)] = true
		}
		return nil
	})
	for dir := range dirs {
		pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") },
			parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range pkgs {
			checked++
			found := false
			for _, f := range p.Files {
				if f.Doc != nil && strings.Contains(f.Doc.Text(), "Where it sits:") {
					found = true
				}
			}
			if !found {
				t.Errorf("package %s (%s) has no package comment saying \"Where it sits:\"", name, dir)
			}
		}
	}
	if checked < 30 {
		t.Fatalf("checked %d packages: the walk missed the module", checked)
	}
}
