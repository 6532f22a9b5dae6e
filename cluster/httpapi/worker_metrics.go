package httpapi

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/govern"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// workerMetrics are the worker control plane's fleet metrics (issue 18
// §4), counted by the manager that serves the call (worker calls are
// served by the regional leader; a gate or a follower forwards them), so
// each heartbeat or report counts once:
//
//   - strata_worker_lease_extensions_total: leases heartbeats renewed.
//     A heartbeat renews the worker's liveness, which keeps every lease
//     it still holds past the ack window (DESIGN §10); each running
//     workflow it names that the ledger holds LEASED to it under that
//     fence is one extension (a workflow named twice counts once).
//   - strata_workflow_failures_total{cause}: workflow attempts workers
//     reported failed (/fail), by the cause the retry policies match
//     (cluster/govern.Classify: worker_error, timeout, permanent). A
//     report counts once the ledger applied it, or when it was
//     acknowledged below the tier (?durability=local: its outcome is
//     not known yet, and it passed every check the ledger makes); a
//     refused or repeated report does not count. Leases lost to a silent
//     worker are strata_workflow_leases_lost_total (cluster/lifecycle).
//
// Labels are a bounded set, never a worker, workflow or tenant. Gates
// register none of them (they serve no worker call).
type workerMetrics struct {
	extensions prometheus.Counter
	failures   *prometheus.CounterVec
}

// workflowFailureCauses are the causes a worker's failure is classified
// into (every value govern.Classify returns).
var workflowFailureCauses = []govern.Cause{govern.CauseError, govern.CauseTimeout, govern.CausePermanent}

func newWorkerMetrics(reg prometheus.Registerer, manager bool) *workerMetrics {
	m := &workerMetrics{
		extensions: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_worker_lease_extensions_total",
			Help: "Leases a worker heartbeat renewed: running workflows it named that the ledger still holds leased to it."}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_workflow_failures_total",
			Help: "Workflow attempts workers reported failed, by cause (worker_error, timeout, permanent)."}, []string{"cause"}),
	}
	for _, c := range workflowFailureCauses {
		m.failures.WithLabelValues(string(c))
	}
	if manager {
		reg.MustRegister(m.extensions, m.failures)
	}
	return m
}

// heldLeases counts the distinct workflows of running that worker holds
// in the ledger (wfs) under the fence it names.
func heldLeases(worker string, running []api.RunningWorkflow, wfs map[string]*fsm.WorkflowState) int {
	n := 0
	seen := make(map[string]bool, len(running))
	for _, rw := range running {
		if !seen[rw.Workflow] && holds(worker, rw, wfs) {
			seen[rw.Workflow] = true
			n++
		}
	}
	return n
}

// reportedFailures returns the causes of the failures among reps that
// count: results[i] is report i's answer, applied, or without an outcome
// when acknowledged below the tier.
func reportedFailures(reps []report, results []api.WorkerReportResult) []govern.Cause {
	var out []govern.Cause
	for i := range reps {
		f, ok := reps[i].end.(*fsm.WorkflowFailed)
		if !ok {
			continue
		}
		if o := results[i].Outcome; o == "" || o == fsm.OutcomeApplied.String() {
			out = append(out, govern.Classify(f.Error))
		}
	}
	return out
}

// countFailures counts the failures among reps (reportedFailures).
func (m *workerMetrics) countFailures(reps []report, results []api.WorkerReportResult) {
	for _, c := range reportedFailures(reps, results) {
		m.failures.WithLabelValues(string(c)).Inc()
	}
}
