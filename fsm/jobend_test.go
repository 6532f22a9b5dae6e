package fsm_test

import (
	"fmt"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

// endStep is one event of a Config.Ended table: its body and fence; the
// job's events are one millisecond apart from node 1.
type endStep struct {
	body  fsm.Body
	fence uint64
}

// end is what a table expects Ended to hear: the status entered and the
// index of the step whose event ended the job.
type end struct {
	status fsm.JobStatus
	step   int
}

// recordEnds returns a ledger over st whose Ended appends to *got.
func recordEnds(t *testing.T, st fsm.Store, got *[]fsm.JobEnd) *fsm.Ledger {
	t.Helper()
	led, err := fsm.New(fsm.Config{Store: st, Ended: func(e fsm.JobEnd) { *got = append(*got, e) }})
	if err != nil {
		t.Fatal(err)
	}
	return led
}

func TestEnded_EachMoveIntoATerminalStatusIsToldOnce(t *testing.T) {
	tests := []struct {
		name  string
		steps []endStep
		want  []end
	}{
		{"completed after both regions accepted; late reports end nothing",
			[]endStep{{accept("use1"), 1}, {accept("euw1"), 1}, {complete(), 2}, {progress("use1", 9, true), 2}},
			[]end{{completed, 2}}},
		{"a cancellation ends when the last region acknowledges it",
			[]endStep{{accept("use1"), 1}, {cancel(), 2}, {ack("euw1"), 2}, {ack("use1"), 2}},
			[]end{{cancelled, 3}}},
		{"a failure ends at once; the acknowledgements after it end nothing",
			[]endStep{{accept("use1"), 1}, {failIn("use1"), 2}, {ack("use1"), 2}, {ack("euw1"), 2}},
			[]end{{failed, 1}}},
		{"a time-out ends a job that never ran",
			[]endStep{{timeout(), 2}},
			[]end{{timedOut, 0}}},
		{"a completion waiting for an acceptance ends the job at the acceptance",
			[]endStep{{complete(), 2}, {accept("use1"), 1}},
			[]end{{completed, 1}}},
		{"a concurrent cancellation that overturns a completion ends the job again",
			[]endStep{{accept("use1"), 1}, {complete(), 2}, {cancel(), 1}, {ack("use1"), 2}, {ack("euw1"), 2}},
			[]end{{completed, 1}, {cancelled, 4}}},
		{"a higher-fenced decision over a terminal one is no new end",
			[]endStep{{accept("use1"), 1}, {failIn("use1"), 2}, {timeout(), 3}},
			[]end{{failed, 1}}},
		{"nothing ends while the job runs",
			[]endStep{{accept("use1"), 1}, {progress("use1", 3, false), 1}},
			nil},
	}
	for _, tt := range tests {
		for _, oneBatch := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/one batch=%v", tt.name, oneBatch), func(t *testing.T) {
				var got []fsm.JobEnd
				led := recordEnds(t, memstore.New(), &got)
				j := fsmtest.NewJob(tableJobID, "acme", 100, "use1", "euw1")
				created := j.Created()
				if _, err := led.Apply(1, []fsm.Event{created}); err != nil {
					t.Fatal(err)
				}
				evs := make([]fsm.Event, len(tt.steps))
				for i, s := range tt.steps {
					evs[i] = j.Ev(1, s.fence, s.body)
				}
				if oneBatch {
					if _, err := led.Apply(2, evs); err != nil {
						t.Fatal(err)
					}
				} else {
					for i := range evs {
						if _, err := led.Apply(uint64(i+2), evs[i:i+1]); err != nil {
							t.Fatal(err)
						}
					}
				}
				if len(got) != len(tt.want) {
					t.Fatalf("told %d ends (%+v), want %d", len(got), got, len(tt.want))
				}
				for i, w := range tt.want {
					g := got[i]
					if g.Status != w.status || g.At != evs[w.step].HLC || g.Created != created.HLC ||
						g.JobID != tableJobID || g.Tenant != "acme" {
						t.Errorf("end %d: %+v, want %s at step %d (%s)", i, g, w.status, w.step, evs[w.step].HLC)
					}
					if g.Decision.Type == 0 {
						t.Errorf("end %d: no decision", i)
					}
				}
			})
		}
	}
}

func TestEnded_TheDecisionSaysWhyAJobFailed(t *testing.T) {
	var got []fsm.JobEnd
	led := recordEnds(t, memstore.New(), &got)
	j := fsmtest.NewJob(tableJobID, "acme", 100, "use1")
	f := &fsm.JobFailed{Error: "workflow w failed (attempt 3, attempts exhausted (3 of 3)): boom", FailedRegion: "use1"}
	if _, err := led.Apply(1, []fsm.Event{j.Created(), j.Ev(1, 1, accept("use1")), j.Ev(1, 2, f)}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Decision.Type != fsm.TypeJobFailed {
		t.Fatalf("ends: %+v", got)
	}
	if b, ok := got[0].Decision.Body.(*fsm.JobFailed); !ok || b.Error != f.Error {
		t.Fatalf("decision body: %+v", got[0].Decision.Body)
	}
}

func TestEnded_AFailedOrRepeatedBatchTellsNothing(t *testing.T) {
	var got []fsm.JobEnd
	st := fsmtest.NewFaultyStore(memstore.New())
	led := recordEnds(t, st, &got)
	j := fsmtest.NewJob(tableJobID, "acme", 100, "use1")
	if _, err := led.Apply(1, []fsm.Event{j.Created(), j.Ev(1, 1, accept("use1"))}); err != nil {
		t.Fatal(err)
	}
	done := j.Ev(1, 2, complete())
	st.FailAfter(0)
	if _, err := led.Apply(2, []fsm.Event{done}); err == nil {
		t.Fatal("the failing store's batch applied")
	}
	if len(got) != 0 {
		t.Fatalf("a failed batch told %+v", got)
	}
	st.Heal()
	if _, err := led.Apply(2, []fsm.Event{done}); err != nil {
		t.Fatal(err)
	}
	// The same index again (skipped) and the same event again (a duplicate).
	if _, err := led.Apply(2, []fsm.Event{done}); err != nil {
		t.Fatal(err)
	}
	if _, err := led.Apply(3, []fsm.Event{done}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Status != completed || got[0].JobID != tableJobID {
		t.Fatalf("ends: %+v, want one completion", got)
	}
}
