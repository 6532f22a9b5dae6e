package wal

import (
	"testing"

	"github.com/strata-ledger/strata/internal/importcheck"
)

// TestImports_OnlyWhatDESIGNAllows checks DESIGN §2 for this package: the
// non-test code imports the standard library, hlc, Prometheus and x/sys
// only. Comparison stores (bbolt, raft-boltdb) are for test code.
func TestImports_OnlyWhatDESIGNAllows(t *testing.T) {
	importcheck.Only(t, ".", importcheck.Std, importcheck.Module+"/hlc",
		"github.com/prometheus/client_golang/prometheus", "golang.org/x/sys/unix")
}
