package bundle

import (
	"testing"

	"github.com/strata-ledger/strata/internal/importcheck"
)

// TestImports_NoClusterNoNetwork: bundle sits beside cluster on the path
// cmd/strata → bundle → fsm → hlc (DESIGN §2). It imports the standard
// library, fsm and hlc only, and nothing that opens a connection, so
// verifying a bundle can make no network call.
func TestImports_NoClusterNoNetwork(t *testing.T) {
	const m = importcheck.Module
	importcheck.Only(t, ".", importcheck.Std, m+"/fsm", m+"/hlc")
	importcheck.Never(t, ".", "net", "net/...", "os", "os/...", "time/tzdata")
}
