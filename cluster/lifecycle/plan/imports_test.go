package plan

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The planners stay pure and reusable only if they depend on the ledger's
// types and nothing of the node: the standard library and fsm alone.
func TestImports_StandardLibraryAndFSMOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path != "github.com/strata-ledger/strata/fsm" && strings.Contains(strings.Split(path, "/")[0], ".") {
				t.Errorf("%s imports %s: the planners may import only the standard library and fsm", name, path)
			}
		}
	}
}
