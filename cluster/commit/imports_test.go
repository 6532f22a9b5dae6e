package commit

import (
	"testing"

	"github.com/strata-ledger/strata/internal/importcheck"
)

// The pipeline reaches Raft only through the group package.
func TestImports_NoConsensusLibraries(t *testing.T) {
	importcheck.Never(t, ".", "github.com/hashicorp/raft", "github.com/hashicorp/memberlist", "net/http")
}
