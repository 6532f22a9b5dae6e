package compose

import (
	"reflect"
	"testing"
	"time"
)

// TestPlanFaults_SeedReplaysAndGroupsKeepAMajority checks the planner
// offline (no Docker): a seed gives the same plan, another seed another
// one, and every plan keeps each Raft group's majority, bounds the faults
// at once and heals everything before the end.
func TestPlanFaults_SeedReplaysAndGroupsKeepAMajority(t *testing.T) {
	services := composeServices("10.231")
	groupOf := map[string]string{}
	netsOf := map[string]map[string]string{}
	for _, s := range services {
		groupOf[s.Name], netsOf[s.Name] = s.Group, s.Nets
	}
	const duration = 3 * time.Minute
	for seed := uint64(1); seed <= 50; seed++ {
		plan := planFaults(seed, duration, services)
		if !reflect.DeepEqual(plan, planFaults(seed, duration, services)) {
			t.Fatalf("seed %d: two plans differ", seed)
		}
		if len(plan) < 10 {
			t.Fatalf("seed %d: %d faults in %v, want a busy schedule", seed, len(plan), duration)
		}
		for i, f := range plan {
			if f.At+f.Hold > duration || f.Hold < minFaultHold && f.At+f.Hold != duration {
				t.Errorf("seed %d: %v does not heal within the run", seed, f)
			}
			if f.Kind == faultDisconnect {
				if _, ok := netsOf[f.Target][f.Network]; !ok {
					t.Errorf("seed %d: %v: %s is not on %s", seed, f, f.Target, f.Network)
				}
			}
			active := 0
			for j, g := range plan[:i] {
				if g.At+g.Hold <= f.At {
					continue
				}
				active++
				if groupOf[g.Target] == groupOf[f.Target] {
					t.Errorf("seed %d: faults %d (%v) and %d (%v) overlap in group %s", seed, j, g, i, f, groupOf[f.Target])
				}
			}
			if active >= maxFaultsAtOnce {
				t.Errorf("seed %d: %v starts with %d faults active", seed, f, active)
			}
		}
	}
	if reflect.DeepEqual(planFaults(1, duration, services), planFaults(2, duration, services)) {
		t.Errorf("seeds 1 and 2 give the same plan")
	}
	c := countByKind(planFaults(7, time.Hour, services))
	for _, k := range faultKinds {
		if c[k] == 0 {
			t.Errorf("an hour's plan has no %s fault: %v", k, c)
		}
	}
}
