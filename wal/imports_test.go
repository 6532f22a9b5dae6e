package wal

import (
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestImports_OnlyWhatDESIGNAllows checks DESIGN §2 for this package: the
// non-test code imports the standard library, hlc, Prometheus and x/sys
// only. Comparison stores (bbolt, raft-boltdb) are for test code.
func TestImports_OnlyWhatDESIGNAllows(t *testing.T) {
	allowed := []string{
		"github.com/strata-ledger/strata/hlc",
		"github.com/prometheus/client_golang/prometheus",
		"golang.org/x/sys/unix",
	}
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			if !strings.Contains(first, ".") {
				continue // standard library
			}
			if !slices.Contains(allowed, path) {
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}
