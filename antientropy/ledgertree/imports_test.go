package ledgertree

import (
	"testing"

	"github.com/strata-ledger/strata/internal/importcheck"
)

// The tracker joins a ledger and a tree, and nothing of the node: no
// consensus, no transport.
func TestImports_LedgerAndTreeOnly(t *testing.T) {
	const m = importcheck.Module
	importcheck.Only(t, ".", importcheck.Std, m+"/fsm", m+"/antientropy")
}
