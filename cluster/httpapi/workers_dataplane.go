package httpapi

import (
	"github.com/strata-ledger/strata/fsm"
)

// DataPlaneUpdate is one workflow's cumulative counters that a worker sent
// over the progress data plane (transport/progress), as the manager's
// receiver folded them.
type DataPlaneUpdate struct {
	Worker    string
	Workflow  string
	Fence     uint64
	Completed uint64
	Failed    uint64
}

// DataPlaneEvents turns folded data-plane counters into the events the
// HTTP progress call proposes for the same counters: the same checks
// against the ledger (checkReport: the worker holds the lease at that
// fence) and the same WorkflowProgress events (reportEvents), read from
// one consistent state. passed[i] says whether ups[i] made an event; one
// that did not (the lease moved on or ended, or its counters break a
// ledger limit) is left out without failing the others, since no caller
// waits for its answer.
func (sv *Server) DataPlaneEvents(ups []DataPlaneUpdate) (events []fsm.Event, passed []bool, err error) {
	ids := make([]string, len(ups))
	for i, u := range ups {
		ids[i] = u.Workflow
	}
	wfs, err := sv.ledgerWorkflows(ids)
	if err != nil {
		return nil, nil, err
	}
	passed = make([]bool, len(ups))
	for i, u := range ups {
		rp := report{workflow: u.Workflow, fence: u.Fence,
			progress: &fsm.WorkflowProgress{Workflow: u.Workflow, Completed: u.Completed, Failed: u.Failed}}
		if checkReportBodies("", rp) != nil {
			continue
		}
		_, evs, _, err := sv.reportEvents(u.Worker, []report{rp}, wfs)
		if err != nil || len(evs) == 0 {
			continue
		}
		events, passed[i] = append(events, evs...), true
	}
	return events, passed, nil
}
