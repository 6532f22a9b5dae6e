package lifecycle

import (
	"testing"

	"github.com/strata-ledger/strata/internal/importcheck"
)

// The package's own (non-test) imports stay narrow: no consensus or
// gossip library, no HTTP, not the node package (doc.go).
func TestImports_NoConsensusHTTPOrNode(t *testing.T) {
	importcheck.Never(t, ".", "github.com/hashicorp/raft", "github.com/hashicorp/memberlist", "net/http",
		importcheck.Module+"/cluster")
}
