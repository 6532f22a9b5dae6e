package fsm_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports_FollowTheDesign: the fsm packages import the standard
// library and only the packages DESIGN §2 allows (never hashicorp/raft:
// package cluster wraps the Ledger); module packages are named without
// the module prefix, others by their full path.
func TestImports_FollowTheDesign(t *testing.T) {
	const module = "github.com/strata-ledger/strata/"
	allowed := map[string][]string{
		".":         {"hlc"},
		"memstore":  {"fsm"},
		"fsmtest":   {"fsm", "hlc"},
		"boltstore": {"fsm", "go.etcd.io/bbolt"},
	}
	for dir, ok := range allowed {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				first, _, _ := strings.Cut(path, "/")
				if !strings.Contains(first, ".") {
					continue // standard library
				}
				if local, _ := strings.CutPrefix(path, module); !contains(ok, local) {
					t.Errorf("%s imports %s", file, path)
				}
			}
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
