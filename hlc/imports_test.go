package hlc

import (
	"testing"

	"github.com/strata-ledger/strata/internal/importcheck"
)

// The clock is pure: the standard library only (DESIGN §2).
func TestImports_StandardLibraryOnly(t *testing.T) { importcheck.Only(t, ".", importcheck.Std) }
