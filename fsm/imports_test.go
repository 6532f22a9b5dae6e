package fsm_test

import (
	"testing"

	"github.com/strata-ledger/strata/internal/importcheck"
)

// TestImports_FollowTheDesign: the fsm packages import the standard
// library and only the packages DESIGN §2 allows (never hashicorp/raft:
// the group package wraps the Ledger).
func TestImports_FollowTheDesign(t *testing.T) {
	const m = importcheck.Module
	importcheck.Only(t, ".", importcheck.Std, m+"/hlc")
	importcheck.Only(t, "memstore", importcheck.Std, m+"/fsm")
	importcheck.Only(t, "fsmtest", importcheck.Std, m+"/fsm", m+"/hlc")
	importcheck.Only(t, "boltstore", importcheck.Std, m+"/fsm", "go.etcd.io/bbolt")
}
