package worker

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/strata-ledger/strata/transport/api"
)

// Retry bounds: transport failures and unavailable managers are retried
// with doubling delays; a workflow's end report gives up after
// maxEndAttempts (its lease then lapses and the manager reschedules it).
const (
	retryBaseDelay = 100 * time.Millisecond
	retryMaxDelay  = 2 * time.Second
	maxEndAttempts = 8
	// reportTimeout bounds one report call.
	reportTimeout = 10 * time.Second
)

// errKind is what a failed call means to the worker.
type errKind int

const (
	errRetry         errKind = iota // transport failure, 5xx, 429: try again
	errPermanent                    // the manager refused the call itself
	errUnknownWorker                // the region forgot the worker: register again
)

// classify sorts a call's error.
func classify(err error) errKind {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return errRetry // no node answered, the connection broke, a timeout
	}
	switch {
	case ae.Code == api.CodeUnknownWorker:
		return errUnknownWorker
	case ae.Status >= http.StatusInternalServerError, ae.Status == http.StatusTooManyRequests,
		ae.Status == http.StatusRequestTimeout, ae.Code == api.CodeUnavailable, ae.Code == api.CodeTimeout:
		return errRetry
	}
	return errPermanent
}

// movedOnCodes are the report rejections that mean the lease is no longer
// this worker's under this fence: the workflow must stop at once.
var movedOnCodes = []string{"stale_fence", "worker_mismatch", "unknown_workflow", "illegal_transition"}

// acceptedOutcomes are report outcomes the ledger took (absorbed: recorded
// by a job that had already ended).
var acceptedOutcomes = []string{"applied", "duplicate", "absorbed"}

// verdict is what a report's answer means for its workflow.
type verdict int

const (
	reportAccepted verdict = iota
	reportMovedOn          // stop the workflow: its lease moved on
	reportLost             // stop everything and register again
	reportRefused          // the manager refused the report for another reason
	reportRetry            // send it again
)

// judge reads the answer to a report on workflow: the call's error, else
// the workflow's result (code before outcome: an absorbed stale report is
// still stale). An answer without a result for the workflow was accepted
// below its tier (durability local).
func judge(res *api.WorkerReportResponse, err error, workflow string) (verdict, string) {
	if err != nil {
		switch classify(err) {
		case errUnknownWorker:
			return reportLost, err.Error()
		case errPermanent:
			return reportRefused, err.Error()
		}
		return reportRetry, err.Error()
	}
	if res == nil {
		return reportAccepted, ""
	}
	i := slices.IndexFunc(res.Results, func(x api.WorkerReportResult) bool { return x.Workflow == workflow })
	if i < 0 {
		return reportAccepted, ""
	}
	x := res.Results[i]
	switch {
	case slices.Contains(movedOnCodes, x.Code) || slices.Contains(movedOnCodes, x.Outcome):
		return reportMovedOn, describe(x)
	case x.Code == api.CodeUnknownWorker || x.Outcome == api.CodeUnknownWorker:
		return reportLost, describe(x)
	case slices.Contains(acceptedOutcomes, x.Outcome):
		return reportAccepted, x.Outcome
	}
	return reportRefused, describe(x)
}

func describe(x api.WorkerReportResult) string {
	s := x.Outcome
	if x.Code != "" {
		s += " " + x.Code
	}
	if x.Message != "" {
		s += ": " + x.Message
	}
	return s
}

// backoff paces retries: retryBaseDelay, doubling up to retryMaxDelay.
type backoff struct{ next time.Duration }

// wait sleeps for the next delay; false if ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	d := b.next
	if d == 0 {
		d = retryBaseDelay
	}
	b.next = min(2*d, retryMaxDelay)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (b *backoff) reset() { b.next = 0 }
