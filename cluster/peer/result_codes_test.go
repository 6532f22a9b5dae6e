package peer

import (
	"strings"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

// Issue 17, finding 2: a rejection of an event naming another tenant's
// job or workflow crosses the wire as the rejection of an unknown one:
// same code, same message, no trace of the other tenant.
func TestFinding2_ResultCodesDoNotRevealOtherTenants(t *testing.T) {
	const secret = "umbrella-secret-tenant"
	theirs := fsmtest.NewJob("use1-1700000000000-gate1-00007", secret, 500, "use1")
	created := theirs.Created()
	wf := fsm.WorkflowID(theirs.ID, "use1", "checkout", 1)
	dispatched := theirs.Ev(1, 1, &fsm.WorkflowDispatched{Workflow: wf, Name: "checkout", Instance: 1,
		Spec: created.Body.(*fsm.JobCreated).Spec.Workflows[0]})
	ours := fsmtest.NewJob(theirs.ID, "acme", 900, "use1")
	batch := []fsm.Event{
		ours.Ev(1, 1, &fsm.JobAccepted{Region: "use1", WorkerCount: 1}),
		ours.Ev(1, 1, &fsm.WorkflowCancelled{Workflow: wf}),
	}
	apply := func(setup ...fsm.Event) []ResultWire {
		t.Helper()
		led, err := fsm.New(fsm.Config{Store: memstore.New()})
		if err != nil {
			t.Fatal(err)
		}
		if len(setup) > 0 {
			if _, err := led.Apply(1, setup); err != nil {
				t.Fatal(err)
			}
		}
		r, err := led.Apply(2, append([]fsm.Event(nil), batch...))
		if err != nil {
			t.Fatal(err)
		}
		return encodeResults(r)
	}
	got, want := apply(created, dispatched), apply()
	for i, code := range []string{"unknown_job", "unknown_workflow"} {
		if got[i] != want[i] || got[i].Code != code || strings.Contains(got[i].Message, secret) {
			t.Fatalf("event %d: %+v, an unknown one gets %+v (want code %s)", i, got[i], want[i], code)
		}
		if rebuilt := decodeResults(got[i : i+1])[0]; rebuilt.Err.Error() != want[i].Message || ResultCode(rebuilt.Err) != code {
			t.Fatalf("event %d rebuilt as %v (%s)", i, rebuilt.Err, ResultCode(rebuilt.Err))
		}
	}
}
