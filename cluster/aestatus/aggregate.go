// Package aestatus answers GET /v1/cluster/antientropy and POST
// /v1/cluster/antientropy/run on a gate, for the whole cluster: it asks
// one gate per region (itself for its own) for its region's nodes — the
// gate and the region's managers, each reporting its replica verdict and,
// on the region's leader, the latest regional ↔ global round — and folds
// the answers into one status (Aggregate, pure). Internal calls carry the
// cluster token; answers are bounded.
package aestatus

import (
	"fmt"
	"slices"

	"github.com/strata-ledger/strata/transport/api"
)

// Aggregate folds the nodes' reports into the cluster's status: one
// regional-global pair per region that has managers, one replica pair per
// group, the divergent replicas and the nodes that did not answer.
func Aggregate(nodes []api.AntiEntropyNode, unreachable []string) api.AntiEntropyStatus {
	out := api.AntiEntropyStatus{Pairs: []api.AntiEntropyPair{}, DivergentReplicas: []string{}}
	groups := map[string][]api.AntiEntropyNode{}
	regional := map[string]*api.AntiEntropyPair{}
	for _, n := range nodes {
		groups[n.Group] = append(groups[n.Group], n)
		if n.Replica == "divergent" {
			out.DivergentReplicas = append(out.DivergentReplicas, n.Node)
		}
		if n.Group == n.Region { // a manager: its group is its region
			cur, seen := regional[n.Region]
			switch {
			case !seen:
				regional[n.Region] = nil
				if n.Regional != nil {
					regional[n.Region] = n.Regional
				}
			case n.Regional != nil && (cur == nil || (n.Leader && n.Regional.LastRound.After(cur.LastRound))):
				regional[n.Region] = n.Regional
			}
		}
	}
	for _, region := range sortedKeys(regional) {
		p := api.AntiEntropyPair{Kind: api.AntiEntropyRegionalGlobal, Region: region, Group: region, Error: "no round yet"}
		if r := regional[region]; r != nil {
			p = *r
			p.Kind, p.Region, p.Group = api.AntiEntropyRegionalGlobal, region, region
		}
		out.Pairs = append(out.Pairs, p)
	}
	for _, g := range sortedKeys(groups) {
		members := groups[g]
		p := api.AntiEntropyPair{Kind: api.AntiEntropyReplica, Group: g, RootsEqual: true}
		if g != "global" && len(members) > 0 {
			p.Region = members[0].Region
		}
		unverified := 0
		for _, n := range members {
			switch n.Replica {
			case "divergent":
				p.Differences++
				p.RootsEqual = false
			case "verified":
			default:
				unverified++
				p.RootsEqual = false
			}
		}
		if unverified > 0 {
			p.Error = fmt.Sprintf("%d of %d replicas not verified yet", unverified, len(members))
		}
		out.Pairs = append(out.Pairs, p)
	}
	slices.Sort(out.DivergentReplicas)
	out.Unreachable = slices.Sorted(slices.Values(unreachable))
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
