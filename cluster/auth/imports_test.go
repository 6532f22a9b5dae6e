package auth

import (
	"testing"

	"github.com/strata-ledger/strata/internal/importcheck"
)

// Tokens and scopes are a leaf: nothing of the node.
func TestImports_StandardLibraryOnly(t *testing.T) { importcheck.Only(t, ".", importcheck.Std) }
