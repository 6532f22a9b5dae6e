package console

import (
	"testing"

	"github.com/strata-ledger/strata/internal/importcheck"
)

// The console is files and a handler: nothing of the node.
func TestImports_StandardLibraryOnly(t *testing.T) { importcheck.Only(t, ".", importcheck.Std) }
