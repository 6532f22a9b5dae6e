package dataplane

import (
	"testing"

	"github.com/strata-ledger/strata/internal/importcheck"
)

// TestImports_NarrowViewsOnly: the data plane uses the node through
// Config's views and never imports the node's package, Raft or gossip.
func TestImports_NarrowViewsOnly(t *testing.T) {
	m := importcheck.Module
	importcheck.Only(t, ".", importcheck.Std, "github.com/prometheus/client_golang/prometheus",
		m+"/cluster/auth", m+"/cluster/commit", m+"/cluster/httpapi", m+"/cluster/livestats",
		m+"/fsm", m+"/hlc", m+"/transport/api", m+"/transport/progress", m+"/wal")
}
