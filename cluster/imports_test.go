package cluster

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/internal/importcheck"
)

// Only the group package (and this wiring) imports hashicorp/raft: every
// other package of the node sees the Raft group through group's own types
// (cluster/DESIGN.md).
func TestImports_OnlyGroupAndWiringImportRaft(t *testing.T) {
	err := filepath.WalkDir(".", func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || dir == "." || dir == "group" || strings.HasPrefix(dir, "group/") {
			return err
		}
		if files, _ := filepath.Glob(filepath.Join(dir, "*.go")); len(files) == 0 {
			return nil
		}
		importcheck.Never(t, dir, "github.com/hashicorp/raft", "github.com/hashicorp/raft-boltdb/v2")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
