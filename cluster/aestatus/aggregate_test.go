package aestatus

import (
	"testing"
	"time"

	"github.com/strata-ledger/strata/transport/api"
)

func TestAggregate(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	nodes := []api.AntiEntropyNode{
		{Node: "g1", Group: "global", Region: "use1", Replica: "verified"},
		{Node: "g2", Group: "global", Region: "euw1", Replica: "divergent"},
		{Node: "m1", Group: "use1", Region: "use1", Leader: true, Replica: "verified",
			Regional: &api.AntiEntropyPair{LastRound: t0, Rounds: 3, RootsEqual: true, Differences: 2, Repaired: 2, Bytes: 900}},
		{Node: "m2", Group: "use1", Region: "use1", Replica: "verified",
			Regional: &api.AntiEntropyPair{LastRound: t0.Add(-time.Hour), Rounds: 1}}, // a former leader's
		{Node: "m3", Group: "euw1", Region: "euw1", Replica: "unverified"},
	}
	st := Aggregate(nodes, []string{"m9"})
	want := []api.AntiEntropyPair{
		{Kind: "regional-global", Region: "euw1", Group: "euw1", Error: "no round yet"},
		{Kind: "regional-global", Region: "use1", Group: "use1", LastRound: t0, Rounds: 3, RootsEqual: true, Differences: 2, Repaired: 2, Bytes: 900},
		{Kind: "replica", Region: "euw1", Group: "euw1", Error: "1 of 1 replicas not verified yet"},
		{Kind: "replica", Group: "global", Differences: 1},
		{Kind: "replica", Region: "use1", Group: "use1", RootsEqual: true},
	}
	if len(st.Pairs) != len(want) {
		t.Fatalf("pairs %+v", st.Pairs)
	}
	for i := range want {
		if st.Pairs[i] != want[i] {
			t.Errorf("pair %d: %+v, want %+v", i, st.Pairs[i], want[i])
		}
	}
	if len(st.DivergentReplicas) != 1 || st.DivergentReplicas[0] != "g2" || len(st.Unreachable) != 1 {
		t.Fatalf("divergent %v unreachable %v", st.DivergentReplicas, st.Unreachable)
	}
}
