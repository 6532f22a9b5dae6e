package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/quota"
	"github.com/strata-ledger/strata/cluster/ratelimit"
	"github.com/strata-ledger/strata/fsm"
)

// Admission at submit (issue 18 §1): before anything is proposed, the
// gate checks the tenant's quota against its own applied state. Over
// quota, the submit is refused (429, Retry-After, the limit named in
// details) or, when it asked for it (admission "queue"), accepted held:
// PENDING, not dispatched, until the global leader admits it
// (JobAdmitted) in priority order when capacity frees. The exact
// max_active check of an admission is the ledger's (quota.Hook); the
// check here is the fast path, so two submits racing on two gates may
// both pass it (documented in docs/API.md).

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
}

// governor keeps the gate's in-memory part of admission: the submit
// buckets of max_per_hour and burst, per tenant (and job type). They are
// per gate, not replicated (cluster/ratelimit).
type governor struct {
	submits *ratelimit.Limiter
	now     func() time.Time
}

func newGovernor() *governor {
	return &governor{submits: ratelimit.NewLimiter(0), now: time.Now}
}

// admit decides spec's admission at now: the submit rate first (a token
// of the tenant's and of its job type's bucket), then max_active.
func (j *Jobs) admit(spec *fsm.JobSpec) (admission, error) {
	var (
		out   admission
		limit *quota.Limit
		wait  time.Duration
	)
	now := j.gov.now()
	err := j.cfg.Ledger.View(func(tx fsm.ReadTx) error {
		types := []string{""}
		if spec.Type != "" {
			types = append(types, spec.Type)
		}
		for _, jt := range types {
			p, err := quota.ReadPolicy(tx, spec.Tenant, jt)
			if err != nil || p == nil || p.MaxPerHour == 0 {
				if err != nil {
					return err
				}
				continue
			}
			ok, w := j.gov.submits.Take(quota.Key(spec.Tenant, jt), float64(p.MaxPerHour)/3600, float64(p.BurstOrDefault()), now)
			if !ok {
				limit = &quota.Limit{Tenant: spec.Tenant, JobType: jt, Name: "max_per_hour", Allowed: int64(p.MaxPerHour)}
				wait = w
				return nil
			}
		}
		var err error
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
