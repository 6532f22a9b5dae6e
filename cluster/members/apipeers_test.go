package members

import (
	"slices"
	"testing"

	"github.com/strata-ledger/strata/transport/gossip"
)

func TestAPIPeers(t *testing.T) {
	m := func(id string, role gossip.Role, region, addr string) Member {
		return Member{Meta: gossip.Meta{NodeID: id, Role: role, Region: region, APIAddr: addr}}
	}
	ms := []Member{
		m("eg1", gossip.RoleGate, "euw1", "e:1"),
		m("ug0", gossip.RoleGate, "use1", ""), // no API address: never chosen
		m("um1", gossip.RoleManager, "use1", "u:2"),
		m("em1", gossip.RoleManager, "euw1", "e:2"),
		m("ug1", gossip.RoleGate, "use1", "u:1"),
		m("eg2", gossip.RoleGate, "euw1", "e:3"),
		m("ag1", gossip.RoleGate, "apse1", "a:1"),
	}
	if got := GateAPIFor(ms, "use1"); got != "u:1" {
		t.Errorf("gate for use1: %q, want its own", got)
	}
	if got := GateAPIFor(ms, "mars"); got == "" || got == "u:2" {
		t.Errorf("gate for a region without one: %q, want any gate", got)
	}
	if got := GateAPIFor(nil, "use1"); got != "" {
		t.Errorf("no members: %q", got)
	}
	if got := RegionManagers(ms, "use1"); !slices.Equal(got, []APIPeer{{"um1", "u:2"}}) {
		t.Errorf("use1's managers: %v", got)
	}
	if got := OtherRegionGates(ms, "use1"); !slices.Equal(got, []APIPeer{{"eg1", "e:1"}, {"ag1", "a:1"}}) {
		t.Errorf("other regions' gates: %v, want one per region", got)
	}
}
