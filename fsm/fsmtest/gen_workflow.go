package fsmtest

import (
	"fmt"
	"slices"

	"github.com/strata-ledger/strata/fsm"
)

func (g *Gen) workflowEvent() fsm.Event {
	if len(g.workflows) == 0 || g.pct(15) {
		return g.dispatch()
	}
	w := g.workflows[g.rng.IntN(len(g.workflows))]
	ts := g.now(g.node())
	fence := w.lease
	if g.pct(10) {
		fence = uint64(g.rng.IntN(3))
	}
	tenant := w.tenant
	if g.pct(2) {
		tenant = "umbrella"
	}
	ev := func(body fsm.Body) fsm.Event { return g.event(w.jobID, tenant, "use1", ts, fence, body) }
	if w.failed && g.pct(50) {
		return ev(g.retry(w))
	}
	switch r := g.rng.IntN(100); {
	case r < 25:
		worker := g.worker()
		lease := w.lease + 1
		if g.pct(10) {
			lease = w.lease
		}
		if lease == 0 {
			lease = 1
		}
		w.lease, w.worker = max(w.lease, lease), worker
		return ev(&fsm.WorkflowLeased{Workflow: w.id, Worker: worker, LeaseUntilMs: ts.WallMs + 5000, LeaseFence: lease})
	case r < 60:
		return ev(&fsm.WorkflowProgress{Workflow: w.id, Completed: g.rng.Uint64N(500), Failed: g.rng.Uint64N(20), Stats: g.stats()})
	case r < 72:
		return ev(&fsm.WorkflowCompleted{Workflow: w.id})
	case r < 80:
		w.failed = true
		return ev(&fsm.WorkflowFailed{Workflow: w.id, Error: "worker crashed"})
	case r < 92:
		from := w.worker
		if g.pct(15) || from == "" {
			from = g.worker()
		}
		return ev(&fsm.WorkflowRescheduled{Workflow: w.id, FromWorker: from, Reason: "lease expired"})
	case r < 96:
		return ev(g.retry(w))
	}
	return ev(&fsm.WorkflowCancelled{Workflow: w.id})
}

// retry returns a WorkflowRetryScheduled of w: the right attempt when the
// generator's count is right (it does not know whether the failure before
// it applied), now and then a wrong one.
func (g *Gen) retry(w *genWorkflow) fsm.Body {
	attempt := w.retries + 2
	if g.pct(20) {
		attempt = uint32(2 + g.rng.IntN(3))
	}
	w.failed = false
	w.retries++
	return &fsm.WorkflowRetryScheduled{Workflow: w.id, Attempt: attempt, Cause: "error", NotBeforeMs: int64(1_800_000_000_000 + g.rng.IntN(1000))}
}

func (g *Gen) dispatch() fsm.Event {
	if len(g.workflows) > 0 && g.pct(5) { // dispatch an existing workflow again
		w := g.workflows[g.rng.IntN(len(g.workflows))]
		return g.event(w.jobID, w.tenant, "use1", g.now(1), 1, &fsm.WorkflowDispatched{Workflow: w.id, Name: "checkout",
			Instance: w.instance, Spec: Spec(w.tenant, "use1").Workflows[0]})
	}
	j := g.jobs[g.rng.IntN(len(g.jobs))]
	inst := uint32(len(g.workflows))
	id := fsm.WorkflowID(j.id, "use1", "checkout", inst)
	g.workflows = append(g.workflows, &genWorkflow{id: id, jobID: j.id, tenant: j.tenant, instance: inst})
	return g.event(j.id, j.tenant, "use1", g.now(1), 1, &fsm.WorkflowDispatched{Workflow: id, Name: "checkout", Instance: inst,
		Spec: Spec(j.tenant, "use1").Workflows[0]})
}

func (g *Gen) worker() string {
	if len(g.workers) == 0 || g.pct(10) {
		return fmt.Sprintf("w%d", g.rng.IntN(12))
	}
	return g.workers[g.rng.IntN(len(g.workers))]
}

func (g *Gen) workerEvent() fsm.Event {
	ts := g.now(g.node())
	if g.pct(60) {
		w := fmt.Sprintf("w%d", g.rng.IntN(12))
		g.workers = append(g.workers, w)
		return NewEvent(g.id(), "", "", "use1", NodeName(ts.Node), ts, 0, &fsm.WorkerJoined{Worker: w, Capacity: 4})
	}
	return NewEvent(g.id(), "", "", "use1", NodeName(ts.Node), ts, 0, &fsm.WorkerLeft{Worker: g.worker(), Reason: "drain"})
}

// forwardMark returns a ForwardMark of 1 to 3 tenants (one of them never
// seen in a job) with seqs up to the events sent so far, so marks rise,
// repeat and go back; now and then an invalid one (tenants out of order,
// seq 0, a job id in the envelope).
func (g *Gen) forwardMark() fsm.Event {
	ts := g.now(g.node())
	tenants := append(slices.Clone(genTenants), "zeta")
	g.rng.Shuffle(len(tenants), func(i, k int) { tenants[i], tenants[k] = tenants[k], tenants[i] })
	tenants = tenants[:1+g.rng.IntN(3)]
	slices.Sort(tenants)
	marks := make([]fsm.ForwardPosition, len(tenants))
	for i, t := range tenants {
		marks[i] = fsm.ForwardPosition{Tenant: t, Seq: 1 + g.rng.Uint64N(uint64(len(g.sent))+1)}
	}
	jobID, tenant := "", ""
	switch r := g.rng.IntN(100); {
	case r < 2 && len(marks) > 1:
		marks[0], marks[1] = marks[1], marks[0]
	case r < 4:
		marks[0].Seq = 0
	case r < 6 && len(g.jobs) > 0:
		jobID, tenant = g.jobs[0].id, g.jobs[0].tenant
	}
	return NewEvent(g.id(), jobID, tenant, "use1", NodeName(ts.Node), ts, 0, &fsm.ForwardMark{Marks: marks})
}
