package antientropy

import (
	"testing"

	"github.com/strata-ledger/strata/internal/importcheck"
)

// TestImports_StdOnly: antientropy is pure (DESIGN §2) and depends on
// nothing but the standard library; job digests arrive as [32]byte.
func TestImports_StdOnly(t *testing.T) {
	importcheck.Only(t, ".", importcheck.Std)
	importcheck.Never(t, ".", "os", "net", "net/http", "time", "sync", "math/rand", "math/rand/v2")
}
