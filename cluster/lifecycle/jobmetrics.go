package lifecycle

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/govern"
	"github.com/strata-ledger/strata/fsm"
)

// The fleet's job metrics (issue 18 §4): how long jobs take and how they
// end, and the leases taken back from workers. They are counted where the
// ledger decides, not by scanning it: the gates' ledger tells each job's
// end (fsm.Config.Ended, wired to JobEnded), the regional ledger's
// applied entries tell each rescheduled lease (Entry). Every replica
// applies the same entries, so only the node whose term leads its group
// (its reconcilers run, and Raft still says it leads) counts: summed over
// a group's nodes, each job or lease counts once. Around a leader change
// a job may be counted by both leaders, or by neither, for about one
// ReconcileInterval: the old leader notices late that its term ended,
// and the new one counts from its barrier on.
//
// Labels are bounded sets, never a job id or a tenant.

// Outcomes of strata_job_latency_seconds (the terminal statuses).
const (
	OutcomeCompleted = "completed"
	OutcomeFailed    = "failed"
	OutcomeCancelled = "cancelled"
	OutcomeTimedOut  = "timed_out"
)

// Causes of strata_jobs_failed_total.
const (
	// JobFailureWorkflow: a workflow failed and was not retried (no
	// retry policy, or a cause its policy does not retry).
	JobFailureWorkflow = "workflow_failed"
	// JobFailureRetriesExhausted: a workflow failed on its last attempt.
	JobFailureRetriesExhausted = "retries_exhausted"
	// JobFailureTimeout: the job ran past its timeout (JobTimedOut).
	JobFailureTimeout = "timeout"
)

// exhaustedWords are the words cluster/govern.DecideRetry gives when a
// workflow's attempts ran out; the region's JobFailed error quotes them
// (plan.RegionJob). TestFailureCause_GovernsWordsForExhaustedAttempts
// checks the quote survives the way to the gate.
const exhaustedWords = govern.ExhaustedWhy

// jobLatencyBuckets span a load test's lifetimes, from a job ended at
// once to fsm.MaxJobTimeout (7 days).
var jobLatencyBuckets = []float64{0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400, 604800}

// outcomeOf is the latency outcome of a terminal status; false for any
// other.
func outcomeOf(s fsm.JobStatus) (string, bool) {
	switch s {
	case fsm.JobStatusCompleted:
		return OutcomeCompleted, true
	case fsm.JobStatusFailed:
		return OutcomeFailed, true
	case fsm.JobStatusCancelled:
		return OutcomeCancelled, true
	case fsm.JobStatusTimedOut:
		return OutcomeTimedOut, true
	}
	return "", false
}

// failureCause is why an ended job failed; false if it did not (it
// completed or was cancelled).
func failureCause(e fsm.JobEnd) (string, bool) {
	switch e.Status {
	case fsm.JobStatusTimedOut:
		return JobFailureTimeout, true
	case fsm.JobStatusFailed:
		if f, ok := e.Decision.Body.(*fsm.JobFailed); ok && strings.Contains(f.Error, exhaustedWords) {
			return JobFailureRetriesExhausted, true
		}
		return JobFailureWorkflow, true
	}
	return "", false
}

// jobLatency is the ledger time from e's JobCreated to its end (never
// negative: HLC wall times of different nodes may disagree a little).
func jobLatency(e fsm.JobEnd) time.Duration {
	return time.Duration(max(0, e.At.WallMs-e.Created.WallMs)) * time.Millisecond
}

// jobMetrics are a node's job and lease metrics: the gate's latency and
// failures, the manager's lost leases (each registered by its role only).
type jobMetrics struct {
	// leading is true while the node's term leads: set after the
	// barrier, cleared when the term ends.
	leading    atomic.Bool
	latency    *prometheus.HistogramVec
	failed     *prometheus.CounterVec
	leasesLost prometheus.Counter
}

func newJobMetrics(reg prometheus.Registerer, global bool) *jobMetrics {
	m := &jobMetrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "strata_job_latency_seconds",
			Help: "Time from a job's creation to its end (by the HLC of its JobCreated and of the event that ended it), " +
				"by outcome; counted by the global group's leader as it applies the end.",
			Buckets: jobLatencyBuckets}, []string{"outcome"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_jobs_failed_total",
			Help: "Jobs that ended FAILED or TIMED_OUT, by cause (workflow_failed, retries_exhausted, timeout); " +
				"counted by the global group's leader as it applies the end."}, []string{"cause"}),
		leasesLost: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_workflow_leases_lost_total",
			Help: "Leases taken back from workers silent for the ack window or gone (WorkflowRescheduled); " +
				"counted by the regional leader as it applies them."}),
	}
	if global {
		for _, o := range []string{OutcomeCompleted, OutcomeFailed, OutcomeCancelled, OutcomeTimedOut} {
			m.latency.WithLabelValues(o)
		}
		for _, c := range []string{JobFailureWorkflow, JobFailureRetriesExhausted, JobFailureTimeout} {
			m.failed.WithLabelValues(c)
		}
		reg.MustRegister(m.latency, m.failed)
	} else {
		reg.MustRegister(m.leasesLost)
	}
	return m
}

// ended counts job end e.
func (m *jobMetrics) ended(e fsm.JobEnd) {
	o, ok := outcomeOf(e.Status)
	if !ok {
		return
	}
	m.latency.WithLabelValues(o).Observe(jobLatency(e).Seconds())
	if c, ok := failureCause(e); ok {
		m.failed.WithLabelValues(c).Inc()
	}
}

// entry counts the leases an applied entry took back.
func (m *jobMetrics) entry(results [][]fsm.Result) {
	for _, rs := range results {
		for _, r := range rs {
			if r.Type == fsm.TypeWorkflowRescheduled && r.Outcome == fsm.OutcomeApplied {
				m.leasesLost.Inc()
			}
		}
	}
}

// counting reports whether this node counts what its group applies now:
// its term leads and Raft agrees.
func (l *Lifecycle) counting() bool {
	return l.jobM.leading.Load() && l.cfg.Leadership.IsLeader()
}

// JobEnded counts a job the gates' ledger ended (fsm.Config.Ended on a
// gate): its latency and, if it failed, why. Only the leading gate
// counts. It is called from the ledger's apply, so it does no more than
// observe a histogram.
func (l *Lifecycle) JobEnded(e fsm.JobEnd) {
	if l.cfg.Global && l.counting() {
		l.jobM.ended(e)
	}
}
