package lifecycle

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The package's own (non-test) imports stay narrow: no consensus or
// gossip library, no HTTP, not the node package (doc.go).
func TestImports_NoConsensusHTTPOrNode(t *testing.T) {
	forbidden := []string{"github.com/hashicorp/raft", "github.com/hashicorp/memberlist", "net/http",
		"github.com/strata-ledger/strata/cluster"}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
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
			for _, bad := range forbidden {
				if path == bad || strings.HasPrefix(path, bad+"/") && bad != "github.com/strata-ledger/strata/cluster" {
					t.Errorf("%s imports %s", name, path)
				}
			}
		}
	}
}
