package members

import (
	"slices"
	"testing"

	"github.com/strata-ledger/strata/transport/gossip"
)

// Regions lists each region once, sorted, whatever the members' state.
func TestRegionsOf(t *testing.T) {
	ms := []Member{{Meta: gossip.Meta{Region: "use1"}}, {Meta: gossip.Meta{Region: "euw1"}},
		{Meta: gossip.Meta{Region: "use1"}}, {Meta: gossip.Meta{}}, {Meta: gossip.Meta{Region: "apse1"}}}
	if got := regionsOf(ms); !slices.Equal(got, []string{"apse1", "euw1", "use1"}) {
		t.Fatalf("regions %v", got)
	}
	if got := regionsOf(nil); len(got) != 0 {
		t.Fatalf("no members: %v", got)
	}
}
