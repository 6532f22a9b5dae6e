// Package importcheck lets a package's test state which packages it may
// import, so the direction of imports (DESIGN §2, cluster/DESIGN.md) is a
// test that fails, not a convention. It reads the non-test Go files of a
// directory with go/parser (imports only) and checks their direct
// imports; it keeps no state.
package importcheck

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Module is this module's import path.
const Module = "github.com/strata-ledger/strata"

// Std matches the standard library: an import path whose first element
// has no dot.
const Std = "std"

// Import is one import of one file.
type Import struct {
	File string
	Path string
}

// Imports lists the imports of the non-test .go files in dir.
func Imports(t testing.TB, dir string) []Import {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []Import
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, Import{File: name, Path: p})
		}
	}
	if len(files) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	return out
}

// matches reports whether path is rule: Std, an import path, or, as go
// list's patterns, "x/..." for x and every package below it.
func matches(path, rule string) bool {
	if rule == Std {
		return !strings.Contains(strings.Split(path, "/")[0], ".")
	}
	if tree, ok := strings.CutSuffix(rule, "/..."); ok {
		return path == tree || strings.HasPrefix(path, tree+"/")
	}
	return path == rule
}

// Only fails t for every import of dir's non-test files that matches none
// of allowed (Std, import paths, "x/..." trees).
func Only(t testing.TB, dir string, allowed ...string) {
	t.Helper()
	for _, imp := range Imports(t, dir) {
		ok := false
		for _, a := range allowed {
			ok = ok || matches(imp.Path, a)
		}
		if !ok {
			t.Errorf("%s imports %s; this package may import only %s", imp.File, imp.Path, strings.Join(allowed, ", "))
		}
	}
}

// Never fails t for every import of dir's non-test files that matches one
// of denied.
func Never(t testing.TB, dir string, denied ...string) {
	t.Helper()
	for _, imp := range Imports(t, dir) {
		for _, d := range denied {
			if matches(imp.Path, d) {
				t.Errorf("%s imports %s; this package must never import %s", imp.File, imp.Path, d)
			}
		}
	}
}
