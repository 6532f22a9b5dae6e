package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/quota"
	"github.com/strata-ledger/strata/fsm"
)

// Admission at submit (issue 18 §1): before anything is proposed, the
// gate checks the tenant's quota against its own applied state. Over
// quota, the submit is refused (429, Retry-After, the limit named in
// details) or, when it asked for it (admission "queue"), accepted held:
// PENDING, not dispatched, until the global leader admits it
// (JobAdmitted) in priority order when capacity frees.
//
// Both checks here are fast paths of exact rules the ledger applies to
// every replica alike. max_active: quota.Hook at each admission (two
// submits racing on two gates may both pass the check here).
// max_per_hour: the policy's rate meter, replicated state the ledger
// advances at every JobCreated (quota.MeterHook); the check here reads
// the same meters (quota.RateCheck), so it refuses only what the ledger
// would hold too, and the ledger holds (queued, eligible when its token
// is due) whatever got past it over the rate: a submit acknowledged at
// LOCAL or REGIONAL is then queued, as GET /v1/jobs/{id} shows. Nothing
// of the rate is kept in a gate's memory, so a tenant's rate is the same
// through one gate or all, and no gate restart refills it.

// defaultQuotaRetryAfter is the Retry-After of a max_active refusal: how
// long until a slot frees is not known, so it is a polling hint.
const defaultQuotaRetryAfter = 5 * time.Second

// admission is what the gate decided of a submit.
type admission struct {
	// held: accept the job held (over quota, queueing asked for).
	held bool
	// eligibleAtMs: a held job's first admissible time (a rate limit).
	eligibleAtMs int64
	// limit names the limit that held it (nil: under quota).
	limit *quota.Limit
	// metered: a max_per_hour applies to the job, so the ledger may hold
	// it even though the gate did not (heldByLedger).
	metered bool
}

// governor holds what admission needs besides the ledger: the clock the
// rate meters are read at (a test's fake clock). It keeps no rate state:
// that is the ledger's.
type governor struct {
	now func() time.Time
}

func newGovernor() *governor { return &governor{now: time.Now} }

// admit decides spec's admission at now: the submit rate first (the
// tenant's and its job type's max_per_hour meters), then max_active.
func (j *Jobs) admit(spec *fsm.JobSpec) (admission, error) {
	var (
		out   admission
		limit *quota.Limit
		wait  time.Duration
	)
	now := j.gov.now()
	err := j.cfg.Ledger.View(func(tx fsm.ReadTx) error {
		l, waitMs, metered, err := quota.RateCheck(tx, spec.Tenant, spec.Type, now.UnixMilli())
		out.metered = metered
		if err != nil || l != nil {
			limit, wait = l, time.Duration(waitMs)*time.Millisecond
			return err
		}
		limit, err = quota.Check(tx, spec.Tenant, spec.Type)
		if limit != nil {
			wait = defaultQuotaRetryAfter
		}
		return err
	})
	if err != nil || limit == nil {
		return out, err
	}
	if spec.Admission != fsm.AdmissionQueue {
		return out, overQuota(limit, wait)
	}
	out.held, out.limit = true, limit
	if limit.Name == "max_per_hour" {
		out.eligibleAtMs = now.Add(wait).UnixMilli()
	}
	return out, nil
}

// heldByLedger returns the admission of a submit the gate let through
// (a, not held) as the ledger decided it, once this node has applied the
// entry at index that carried it: held, when the ledger's rate meter had
// no token for it (quota.MeterHook), so the answer says "queued" like a
// hold of the gate's. Only a metered submit that reached its tier can be
// held so; any other keeps a. It only informs the answer: the job exists
// whatever it finds, so a failed wait or read keeps a (the submit must
// not look failed, or a client would submit it again), and
// GET /v1/jobs/{id} shows the hold.
func (j *Jobs) heldByLedger(ctx context.Context, a admission, jobID string, index uint64) admission {
	if a.held || !a.metered || index == 0 {
		return a
	}
	if j.cfg.Applied.Wait(ctx, index) != nil {
		return a
	}
	s, err := j.cfg.Ledger.JobByID(jobID)
	if err != nil || !s.Queued() {
		return a
	}
	a.held, a.eligibleAtMs = true, s.Spec.EligibleAtMs
	a.limit = &quota.Limit{Tenant: s.Tenant, Name: "max_per_hour"}
	return a
}

// overQuota is the 429 of a submit over limit l: Retry-After (whole
// seconds, at least 1) and the limit in details.
func overQuota(l *quota.Limit, wait time.Duration) *httpx.APIError {
	secs := max(int64((wait+time.Second-1)/time.Second), 1)
	return &httpx.APIError{Status: http.StatusTooManyRequests, Code: httpx.CodeTooMany,
		Message: l.Error() + "; retry later, or submit with \"admission\": \"queue\" to wait in the queue",
		Details: map[string]any{"limit": l.Name, "tenant": l.Tenant, "job_type": l.JobType, "allowed": l.Allowed,
			"used": l.Used, "queued": l.Queued, "retry_after_seconds": secs}}
}

// setRetryAfter sets the Retry-After header of a 429 whose details carry
// retry_after_seconds.
func setRetryAfter(w http.ResponseWriter, err error) {
	ae, ok := err.(*httpx.APIError)
	if !ok || ae.Status != http.StatusTooManyRequests {
		return
	}
	if s, ok := ae.Details["retry_after_seconds"].(int64); ok {
		w.Header().Set("Retry-After", strconv.FormatInt(s, 10))
	}
}

// writeError writes err, with Retry-After on a 429 that names one.
func writeError(w http.ResponseWriter, err error) {
	setRetryAfter(w, err)
	httpx.WriteError(w, err)
}

// heldNote is the part of a submit's answer that says it was held.
func heldNote(a admission) (queued bool, nextEligible string, limit string) {
	if !a.held {
		return false, "", ""
	}
	if a.eligibleAtMs > 0 {
		nextEligible = time.UnixMilli(a.eligibleAtMs).UTC().Format(time.RFC3339Nano)
	}
	return true, nextEligible, fmt.Sprint(a.limit.Name)
}

// countSubmit counts a submit's quota outcome in
// strata_http_throttled_requests_total: the limit of a 429, or "queued".
func (sv *Server) countSubmit(err error, a admission) {
	if ae, ok := err.(*httpx.APIError); ok && ae.Status == http.StatusTooManyRequests {
		if l, ok := ae.Details["limit"].(string); ok {
			sv.countThrottled(l)
		}
		return
	}
	if err == nil && a.held {
		sv.countThrottled("queued")
	}
}
