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
