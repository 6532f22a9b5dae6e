package worker

import (
	"testing"

	"github.com/strata-ledger/strata/internal/importcheck"
)

// A worker is a client of the API and nothing else: it never takes part
// in consensus or gossip (DESIGN §1). fsm is allowed for the one rule of
// what a region or name is, transport/progress for the data plane's
// frames.
func TestImports_APIClientOnly(t *testing.T) {
	importcheck.Only(t, ".", importcheck.Std, importcheck.Module+"/transport/api", importcheck.Module+"/transport/progress", importcheck.Module+"/fsm")
}
