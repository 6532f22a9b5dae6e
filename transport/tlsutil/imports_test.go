package tlsutil

import (
	"testing"

	"github.com/strata-ledger/strata/internal/importcheck"
)

// transport owns bytes on the wire and never reaches up into the node
// (DESIGN §2).
func TestImports_NeverCluster(t *testing.T) {
	importcheck.Never(t, ".", importcheck.Module+"/cluster/...")
}
