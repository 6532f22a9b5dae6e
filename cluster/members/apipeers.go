package members

import "github.com/strata-ledger/strata/transport/gossip"

// Which peers' APIs a node calls for cross-group work (anti-entropy
// rounds and status), chosen from gossip: pure functions of a members
// list, so the choices are tested without a cluster.

// APIPeer is a member's node id and API address.
type APIPeer struct {
	ID      string
	APIAddr string
}

// GateAPIFor is the API address of a gate to call from region: one of
// region's own if gossip knows one, else any gate's; "" if none.
func GateAPIFor(ms []Member, region string) string {
	var other string
	for _, m := range ms {
		if m.Meta.Role != gossip.RoleGate || m.Meta.APIAddr == "" {
			continue
		}
		if m.Meta.Region == region {
			return m.Meta.APIAddr
		}
		other = m.Meta.APIAddr
	}
	return other
}

// RegionManagers are the managers of region with an API address.
func RegionManagers(ms []Member, region string) []APIPeer {
	var out []APIPeer
	for _, m := range ms {
		if m.Meta.Role == gossip.RoleManager && m.Meta.Region == region && m.Meta.APIAddr != "" {
			out = append(out, APIPeer{ID: m.Meta.NodeID, APIAddr: m.Meta.APIAddr})
		}
	}
	return out
}

// OtherRegionGates is one gate with an API address of every region but
// region, the first gossip lists.
func OtherRegionGates(ms []Member, region string) []APIPeer {
	seen := map[string]bool{region: true}
	var out []APIPeer
	for _, m := range ms {
		if m.Meta.Role == gossip.RoleGate && !seen[m.Meta.Region] && m.Meta.APIAddr != "" {
			seen[m.Meta.Region] = true
			out = append(out, APIPeer{ID: m.Meta.NodeID, APIAddr: m.Meta.APIAddr})
		}
	}
	return out
}
