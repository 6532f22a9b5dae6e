package plan

import (
	"testing"

	"github.com/strata-ledger/strata/internal/importcheck"
)

// The planners stay pure and reusable only if they depend on the ledger's
// types and nothing of the node: the standard library and fsm alone.
func TestImports_StandardLibraryAndFSMOnly(t *testing.T) {
	importcheck.Only(t, ".", importcheck.Std, importcheck.Module+"/fsm")
}
