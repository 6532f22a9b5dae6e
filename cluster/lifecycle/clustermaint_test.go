package lifecycle

import (
	"errors"
	"slices"
	"testing"

	"github.com/strata-ledger/strata/cluster/govern"
	"github.com/strata-ledger/strata/fsm"
)

// setClusterMaintenance applies the operator's cluster-wide record to s's
// (global) ledger at atMs.
func (s *stepSide) setClusterMaintenance(on, drain bool, atMs int64) {
	s.t.Helper()
	v, err := govern.EncodeMaintenance(govern.MaintenanceRecord{On: on, Drain: drain && on, SinceMs: atMs})
	if err != nil {
		s.t.Fatal(err)
	}
	s.apply(s.ev("", 0, atMs, &fsm.PolicySet{Kind: govern.KindMaintenance, Key: govern.ClusterMaintenanceKey, Value: v,
		Reason: "fleet upgrade", Ticket: "OPS-9", Requestor: "op"}))
}

// maintStep is one step of m over s's ledger at nowMs.
func (s *stepSide) maintStep(m *clusterMaint, regions []string, nowMs int64) maintDelivery {
	s.t.Helper()
	var d maintDelivery
	err := s.l.cfg.Store.View(func(tx fsm.ReadTx) error {
		var err error
		d, err = m.step(tx, regions, "g1", "use1", nowMs)
		return err
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return d
}

func TestClusterMaint_ConvergesEveryRegionAndBacksOff(t *testing.T) {
	s := newStepSide(t, true)
	m := newClusterMaint()
	regions := []string{"euw1", "use1", "use1", "Bad!", "apse1"}
	t0 := int64(stepT0)
	if d := s.maintStep(m, regions, t0); len(d.regions) != 0 {
		t.Fatalf("no cluster record, yet deliveries to %v", d.regions)
	}
	s.setClusterMaintenance(true, false, t0)
	d := s.maintStep(m, regions, t0)
	if want := []string{"apse1", "euw1", "use1"}; !slices.Equal(d.regions, want) {
		t.Fatalf("delivered to %v, want %v", d.regions, want)
	}
	if again := s.maintStep(m, regions, t0+1); len(again.regions) != 0 {
		t.Fatalf("a second delivery while the first runs: %v", again.regions)
	}
	id := d.copy.ID
	m.advance("apse1", id, true, t0+10)
	m.advance("euw1", id, false, t0+10) // down: tried again after a backoff
	m.advance("use1", id, true, t0+10)
	steps := []struct {
		atMs int64
		want []string
	}{
		{t0 + 10 + redeliverMin.Milliseconds() - 1, nil},
		{t0 + 10 + redeliverMin.Milliseconds(), []string{"euw1"}},
	}
	for _, st := range steps {
		if got := s.maintStep(m, regions, st.atMs).regions; !slices.Equal(got, st.want) {
			t.Fatalf("at +%d ms delivered to %v, want %v", st.atMs-t0, got, st.want)
		}
	}
	m.advance("euw1", id, false, t0+2000)
	if got := s.maintStep(m, regions, t0+2000+2*redeliverMin.Milliseconds()-1).regions; len(got) != 0 {
		t.Fatalf("the backoff did not double: delivered to %v", got)
	}
	if got := s.maintStep(m, regions, t0+2000+2*redeliverMin.Milliseconds()).regions; !slices.Equal(got, []string{"euw1"}) {
		t.Fatalf("after the doubled backoff: %v", got)
	}
	m.advance("euw1", id, true, t0+5000)
	// A region that holds the copy gets it again only at the recheck.
	if got := s.maintStep(m, regions, t0+10+maintRecheck.Milliseconds()).regions; !slices.Equal(got, []string{"apse1", "use1"}) {
		t.Fatalf("recheck delivered to %v", got)
	}
}

func TestClusterMaint_AChangeGoesOutAtOnce(t *testing.T) {
	s := newStepSide(t, true)
	m := newClusterMaint()
	regions := []string{"use1", "euw1"}
	t0 := int64(stepT0)
	s.setClusterMaintenance(true, false, t0)
	first := s.maintStep(m, regions, t0)
	m.advance("use1", first.copy.ID, true, t0+5)
	s.setClusterMaintenance(false, false, t0+10) // euw1's delivery of the old copy still runs
	second := s.maintStep(m, regions, t0+11)
	if second.copy.ID == first.copy.ID || !slices.Equal(second.regions, []string{"use1"}) {
		t.Fatalf("after the change: copy %v (was %v) to %v, want the new copy to use1 at once", second.copy.ID, first.copy.ID, second.regions)
	}
	m.advance("euw1", first.copy.ID, true, t0+12) // the old copy landed: that is not the new one
	if got := s.maintStep(m, regions, t0+13).regions; !slices.Equal(got, []string{"euw1"}) {
		t.Fatalf("the region that took the old copy gets the new one: %v", got)
	}
}

// The copy is an event a regional ledger takes: applied once, then a
// duplicate, and a conflict when another leader stamped it; the region
// reads it as the cluster's mode next to its own.
func TestClusterMaint_TheRegionHoldsTheCopy(t *testing.T) {
	g := newStepSide(t, true)
	m := newClusterMaint()
	t0 := int64(stepT0)
	g.setClusterMaintenance(true, true, t0)
	cp := g.maintStep(m, []string{"use1"}, t0).copy
	r := newStepSide(t, false)
	for i, want := range []fsm.Outcome{fsm.OutcomeApplied, fsm.OutcomeDuplicate} {
		r.index++
		res, err := r.ledger.Apply(r.index, []fsm.Event{cp})
		if held, herr := maintHeld(res, err); !held || res[0].Outcome != want {
			t.Fatalf("delivery %d: %v %v (%v), want %s", i+1, res, err, herr, want)
		}
	}
	other := cp
	other.Node = "g2"
	r.index++
	res, err := r.ledger.Apply(r.index, []fsm.Event{other})
	if held, _ := maintHeld(res, err); !held || !errors.Is(res[0].Err, fsm.ErrEventConflict) {
		t.Fatalf("another leader's copy: %v %v", res, err)
	}
	if held, _ := maintHeld([]fsm.Result{{Outcome: fsm.OutcomeRejected, Err: fsm.ErrLimit}}, nil); held {
		t.Fatal("a refused copy counts as held")
	}
	var mode govern.MaintenanceMode
	err = r.l.cfg.Store.View(func(tx fsm.ReadTx) error {
		var err error
		mode, err = readMaintenance(tx, "use1")
		return err
	})
	if err != nil || mode != (govern.MaintenanceMode{On: true, Drain: true, Cluster: true}) {
		t.Fatalf("the region's mode: %+v %v", mode, err)
	}
}
