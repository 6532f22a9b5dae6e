package httpapi

import (
	"testing"

	"github.com/strata-ledger/strata/internal/importcheck"
)

// A handler is a thin edge: the Raft group answers through Consensus and
// gossip through Members; the API never imports their libraries.
func TestImports_NoConsensusOrGossipLibraries(t *testing.T) {
	importcheck.Never(t, ".", "github.com/hashicorp/raft", "github.com/hashicorp/memberlist")
}
