package peer

import (
	"testing"

	"github.com/strata-ledger/strata/internal/importcheck"
)

// Node-to-node calls reach Raft through the group package's proposer only.
func TestImports_NoRaft(t *testing.T) { importcheck.Never(t, ".", "github.com/hashicorp/raft") }
