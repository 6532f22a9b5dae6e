package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"time"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/members"
	"github.com/strata-ledger/strata/cluster/tracing"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/wal"
	"go.opentelemetry.io/otel/attribute"
)

// Jobs is a gate's job write service: it turns a client's submit into a
// JobCreated, commits it through the pipeline and answers a repeat of an
// idempotency key from what the first submit did (cluster/DESIGN.md
// "Idempotency keys"). It never sees the HTTP request or response; its
// errors are the API's error model (*APIError), or errors the handler
// maps the same way. Safe for concurrent use.
type Jobs struct {
	cfg  *Config
	idem *idempotencyCache
	gov  *governor // admission's clock (gov_admission.go)
}

// Submitted is what a submit did.
type Submitted struct {
	JobID string
	// Level is what the submit reached (the first submit's, for a repeat).
	Level commit.Durability
	HLC   hlc.Timestamp
	// Index is the entry that carried it, 0 when it did not reach its
	// tier or is a repeat: the session token's index.
	Index uint64
	// LSN is its NodeWAL record (0 for a repeat): the write's reference
	// when it was acknowledged below its tier.
	LSN wal.LSN
	// Existing: a repeat of an earlier submit's key; nothing new was made.
	Existing bool
	// Admission: whether the job was held over its quota (gov_admission.go).
	Admission admission
}

// Submit creates the job spec describes for p at durability level.
func (j *Jobs) Submit(ctx context.Context, p auth.Principal, spec fsm.JobSpec, level commit.Durability) (Submitted, error) {
	if !p.Allows(auth.ScopeJobsWrite, spec.Tenant) {
		return Submitted{}, forbidden(p, auth.ScopeJobsWrite, spec.Tenant)
	}
	if err := spec.CheckSubmit(); err != nil {
		return Submitted{}, eventError(err)
	}
	if err := gateOnlyFields(&spec, "spec."); err != nil {
		return Submitted{}, err
	}
	if err := j.checkRegions(spec.Regions); err != nil {
		return Submitted{}, err
	}
	keyed := spec.IdempotencyKey != ""
	eventID := commit.NewEventID()
	if keyed {
		eventID = idempotentEventID(spec.Tenant, spec.IdempotencyKey)
		if out, found, err := j.replayFromLedger(spec.Tenant, eventID, &spec); found {
			return out, err
		}
	}
	_, span := j.cfg.Tracer.Start(ctx, tracing.SpanAdmission, attribute.String("strata.tenant", spec.Tenant))
	adm, err := j.admit(&spec)
	if span.IsRecording() {
		span.SetAttributes(attribute.Bool("strata.held", adm.held))
	}
	tracing.Fail(span, err)
	span.End()
	if err != nil {
		return Submitted{}, err
	}
	spec.Held, spec.EligibleAtMs = adm.held, adm.eligibleAtMs
	// The job keeps the submit's trace context: its dispatch, leases,
	// execution and completion join the caller's trace.
	spec.Traceparent = tracing.Traceparent(ctx)
	jobID, ts, err := j.cfg.JobIDs.Next()
	if err != nil {
		return Submitted{}, err
	}
	e := fsm.Event{ID: eventID, Type: fsm.TypeJobCreated, JobID: jobID, Tenant: spec.Tenant, Fence: 1,
		Body: &fsm.JobCreated{Spec: spec, AssignedRegions: spec.Regions}}
	j.cfg.Stamper.Created(&e, ts)
	if err := e.Validate(); err != nil {
		return Submitted{}, eventError(err)
	}
	if keyed {
		if prev, fresh := j.idem.claim(eventID, idemEntry{jobID: jobID, spec: &spec, hlc: ts}); !fresh {
			return replayedAt(prev, &spec, level)
		}
	}
	res, err := j.cfg.Writer.Submit(ctx, []fsm.Event{e}, level)
	lost := err == nil && len(res.Results) == 1 && errors.Is(res.Results[0].Err, fsm.ErrEventConflict)
	if keyed {
		settled := res.Level
		if lost { // another gate's submit of the key won: only the ledger answers for the key
			settled = commit.DurabilityNone
		}
		j.idem.settle(eventID, settled)
	}
	if err != nil {
		return Submitted{}, submitError(err, res, j.cfg.NodeID)
	}
	if lost {
		// The key's job was created earlier (through another gate, or
		// before this gate applied it): answer from the ledger once this
		// node has applied the entry that found the conflict.
		if err := j.cfg.Applied.Wait(ctx, res.Index); err != nil {
			return Submitted{}, submitError(err, res, j.cfg.NodeID)
		}
		if out, found, err := j.replayFromLedger(spec.Tenant, eventID, &spec); found {
			return out, err
		}
	}
	if err := resultError(res); err != nil {
		return Submitted{}, err
	}
	adm = j.heldByLedger(ctx, adm, jobID, res.Index)
	return Submitted{JobID: jobID, Level: res.Level, HLC: ts, Index: res.Index, LSN: res.LSN, Admission: adm}, nil
}

// checkRegions refuses a region no node of the cluster serves.
func (j *Jobs) checkRegions(regions []string) error {
	var ms []members.Member // gossip's members, read once and only if a region is not this gate's
	read := false
	for _, r := range regions {
		if r == j.cfg.Region {
			continue
		}
		if !read {
			ms, read = j.cfg.Members.Members(), true
		}
		if !slices.ContainsFunc(ms, func(m members.Member) bool { return m.Meta.Region == r }) {
			return &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
				Message: fmt.Sprintf("region %q is not a region of this cluster", r), Details: map[string]any{"field": "regions"}}
		}
	}
	return nil
}

// replayFromLedger answers a submit whose key already created a job in
// the ledger; found is false when the ledger does not have it. The lookup
// is the tenant's own (event ids are scoped by tenant): another tenant's
// event with the same id is neither found nor a conflict.
func (j *Jobs) replayFromLedger(tenant string, id fsm.EventID, spec *fsm.JobSpec) (out Submitted, found bool, err error) {
	// Ledger.Event, without its error for the usual answer, absent
	// (two string and two error allocations a submit: issue 19).
	var se *fsm.StoredEvent
	err = j.cfg.Ledger.View(func(tx fsm.ReadTx) error {
		var err error
		se, err = tx.Event(tenant, id)
		return err
	})
	switch {
	case errors.Is(err, fsm.ErrNotFound) || (err == nil && se == nil):
		return Submitted{}, false, nil
	case err != nil:
		return Submitted{}, true, fmt.Errorf("fsm: read event %s: %w", id, err)
	}
	created, ok := se.Body.(*fsm.JobCreated)
	if !ok {
		return Submitted{}, true, &httpx.APIError{Status: http.StatusConflict, Code: httpx.CodeConflict, Message: "idempotency key collides with another event"}
	}
	out, err = replayed(idemEntry{jobID: se.JobID, spec: &created.Spec, hlc: se.HLC, level: j.cfg.Tier}, spec)
	return out, true, err
}

// replayedAt is the answer to a repeat that finds the key in this gate's
// cache, asking for level want. The cached submit reached prev.level
// only: below want it may yet lose at the tier to another gate's submit
// of the key (the client failed over while it was in flight), and its
// job id would then never exist, so the repeat is told to retry (409)
// until the ledger has the key (chaos run, seed 2: an answer from the
// cache at LOCAL named a job that no read ever found).
func replayedAt(prev idemEntry, got *fsm.JobSpec, want commit.Durability) (Submitted, error) {
	out, err := replayed(prev, got)
	if err != nil || out.Level >= want {
		return out, err
	}
	return Submitted{}, &httpx.APIError{Status: http.StatusConflict, Code: httpx.CodeConflict,
		Message: fmt.Sprintf("a submit with idempotency key %q is at %s, not yet %s; retry", got.IdempotencyKey, out.Level, want),
		Details: map[string]any{"job_id": prev.jobID, "durability": out.Level.String()}}
}

// replayed is the answer to a repeated key: the first submit's job and
// level; 409 when the repeat's body differs, or while the first submit is
// still in flight (it may yet fail before the NodeWAL).
func replayed(prev idemEntry, got *fsm.JobSpec) (Submitted, error) {
	switch {
	case !reflect.DeepEqual(normalSpec(prev.spec), normalSpec(got)):
		return Submitted{}, &httpx.APIError{Status: http.StatusConflict, Code: httpx.CodeConflict,
			Message: fmt.Sprintf("idempotency key %q was used for job %s with a different body", got.IdempotencyKey, prev.jobID),
			Details: map[string]any{"job_id": prev.jobID}}
	case prev.level == 0:
		return Submitted{}, &httpx.APIError{Status: http.StatusConflict, Code: httpx.CodeConflict,
			Message: fmt.Sprintf("a submit with idempotency key %q is in flight; retry", got.IdempotencyKey),
			Details: map[string]any{"job_id": prev.jobID}}
	}
	return Submitted{JobID: prev.jobID, Level: prev.level, HLC: prev.hlc, Existing: true}, nil
}

// Cancel asks to cancel job id for p at durability level. It runs on the
// leader (the caller forwards otherwise): the cancel's fence comes from
// the job's current state, read linearizably, once no completion of the
// job is in flight here (cluster/decisive), and none is proposed until
// the cancel reached the tier or was refused.
func (j *Jobs) Cancel(ctx context.Context, p auth.Principal, id string, req api.CancelJobRequest, level commit.Durability) (commit.SubmitResult, hlc.Timestamp, error) {
	release, err := j.cfg.Decisive.Acquire(ctx, id)
	if err != nil {
		return commit.SubmitResult{}, hlc.Timestamp{}, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable,
			Message: fmt.Sprintf("cancel: a decision on job %s is still being written; retry", id)}
	}
	res, ts, err := j.cancel(ctx, p, id, req, level)
	if res.Results == nil && res.LSN != 0 {
		// In the NodeWAL, not at the tier yet (a lower level, or the
		// caller gave up): it may still apply, so it stays in flight.
		go j.releaseAtTier(res.LSN, release)
	} else {
		release()
	}
	return res, ts, err
}

// releaseAtTier releases a decisive write once the pipeline's watermark
// passes its record (at the tier, or refused for good), and at the
// latest after maxDecisiveHold.
func (j *Jobs) releaseAtTier(lsn wal.LSN, release func()) {
	defer release()
	tick := time.NewTicker(decisivePoll)
	defer tick.Stop()
	deadline := time.Now().Add(maxDecisiveHold)
	for j.cfg.Writer.Watermark() < lsn && time.Now().Before(deadline) {
		<-tick.C
	}
}

// How a cancel below the tier is followed: its job takes no completion on
// this node until the watermark passes it, polled every decisivePoll, for
// at most maxDecisiveHold (a record that has not climbed by then is held
// up by a lost quorum, during which nothing is decided anyway).
const (
	decisivePoll    = 10 * time.Millisecond
	maxDecisiveHold = 30 * time.Second
)

func (j *Jobs) cancel(ctx context.Context, p auth.Principal, id string, req api.CancelJobRequest, level commit.Durability) (commit.SubmitResult, hlc.Timestamp, error) {
	if err := j.cfg.Consensus.ConfirmLeadership(ctx); err != nil {
		return commit.SubmitResult{}, hlc.Timestamp{}, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable, Message: "cancel: " + err.Error()}
	}
	s, err := j.job(p, id)
	if err != nil {
		return commit.SubmitResult{}, hlc.Timestamp{}, err
	}
	if !p.Allows(auth.ScopeJobsWrite, s.Tenant) {
		return commit.SubmitResult{}, hlc.Timestamp{}, forbidden(p, auth.ScopeJobsWrite, s.Tenant)
	}
	if s.Status.Terminal() {
		return commit.SubmitResult{}, hlc.Timestamp{}, &httpx.APIError{Status: http.StatusConflict, Code: httpx.CodeConflict,
			Message: fmt.Sprintf("job %s is %s: it cannot be cancelled", id, s.Status), Details: map[string]any{"status": s.Status.String()}}
	}
	if req.Requestor == "" {
		req.Requestor = p.Name
	}
	res, ts, err := commitOwn(ctx, j.cfg, level, fsm.Event{Type: fsm.TypeJobCancellationRequested, JobID: id, Tenant: s.Tenant,
		Fence: s.Fence + 1, Body: &fsm.JobCancellationRequested{Reason: req.Reason, Requestor: req.Requestor}})
	if err == nil {
		err = resultError(res)
	}
	return res, ts, err
}

// job reads a job p may read; another tenant's job is "not found", so a
// token never learns that it exists.
func (j *Jobs) job(p auth.Principal, id string) (*fsm.JobState, error) {
	s, err := j.cfg.Ledger.JobByID(id)
	if err == nil && !p.Allows(auth.ScopeJobsRead, s.Tenant) {
		err = fsm.ErrNotFound
	}
	if errors.Is(err, fsm.ErrNotFound) {
		return nil, &httpx.APIError{Status: http.StatusNotFound, Code: httpx.CodeNotFound, Message: fmt.Sprintf("job %s not found", id)}
	}
	return s, err
}

// commitOwn submits one event this node originates (e carries its type,
// body and job fields): it stamps it (Stamper.Own), validates it and
// submits it at level.
func commitOwn(ctx context.Context, cfg *Config, level commit.Durability, e fsm.Event) (commit.SubmitResult, hlc.Timestamp, error) {
	if err := cfg.Stamper.Own(&e); err != nil {
		return commit.SubmitResult{}, e.HLC, err
	}
	if err := e.Validate(); err != nil {
		return commit.SubmitResult{}, e.HLC, eventError(err)
	}
	res, err := cfg.Writer.Submit(ctx, []fsm.Event{e}, level)
	if err != nil {
		return res, e.HLC, submitError(err, res, cfg.NodeID)
	}
	return res, e.HLC, nil
}

// gateOnlyFields refuses a client's spec that sets a field only the gate
// sets (replay_of, replay_digest, held): 400 naming the field.
func gateOnlyFields(spec *fsm.JobSpec, prefix string) error {
	if f := spec.GateOnlyField(); f != "" {
		return &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: fmt.Sprintf("%s%s is set by the gate (a replay, an admission), not by a client", prefix, f),
			Details: map[string]any{"field": f}}
	}
	return nil
}
