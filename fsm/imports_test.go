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
// library and only the module packages DESIGN §2 allows (never
// hashicorp/raft: package cluster wraps the Ledger).
func TestImports_FollowTheDesign(t *testing.T) {
	const module = "github.com/strata-ledger/strata/"
	allowed := map[string][]string{
		".":        {"hlc"},
		"memstore": {"fsm"},
		"fsmtest":  {"fsm", "hlc"},
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
				local, isLocal := strings.CutPrefix(path, module)
				if !isLocal || !contains(ok, local) {
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
