package memstore_test

import (
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

func newStore(testing.TB) fsm.Store { return memstore.New() }

// TestLedgerSuite runs the store-independent ledger tests on the model
// store; fsm/boltstore runs the same suite.
func TestLedgerSuite(t *testing.T) { fsmtest.RunStoreSuite(t, newStore) }

// Issue 17, finding 2, on the model store (TestLedgerSuite runs them too,
// as fsm/boltstore does on its store).
func TestFinding2_EventIDsAreScopedByTenant(t *testing.T) {
	fsmtest.RunEventIDsScopedByTenant(t, newStore)
}

func TestFinding2_RejectionsDoNotRevealOtherTenants(t *testing.T) {
	fsmtest.RunRejectionsDoNotRevealOtherTenants(t, newStore)
}
