package progress

import (
	"testing"

	"github.com/strata-ledger/strata/internal/importcheck"
)

// TestImports_OnlyWhatDESIGNAllows checks DESIGN §2 for this package: the
// standard library, Prometheus and x/sys/unix (recvmmsg); no Raft, no
// memberlist, no other Strata package.
func TestImports_OnlyWhatDESIGNAllows(t *testing.T) {
	importcheck.Only(t, ".", importcheck.Std, "github.com/prometheus/client_golang/prometheus",
		"golang.org/x/sys/unix")
}
