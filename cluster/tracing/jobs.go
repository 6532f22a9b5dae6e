package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/strata-ledger/strata/transport/api"
)

// Span names of a job's path (issue 18 §4). Server spans are named by
// their route ("POST /v1/jobs"); these are the steps between requests.
const (
	SpanAdmission = "job.admission"     // gate: a submit's admission decision
	SpanDispatch  = "workflow.dispatch" // manager leader: a job's workflows dispatched in its region
	SpanLease     = "workflow.lease"    // manager leader: a workflow leased to a worker
	SpanExecute   = "workflow.execute"  // worker: one lease's run, start to end report
	SpanComplete  = "job.complete"      // gate leader: the job's terminal decision
)

// Job attributes.
func jobAttrs(jobID, region string) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("strata.job_id", jobID), attribute.String("strata.region", region)}
}

// WorkerTrace is cluster/worker's Config.Trace for t: each lease's run is
// a workflow.execute span, a child of the job's trace context, and the
// run's calls (progress, the end report) carry the span on.
func WorkerTrace(t *Tracer) func(ctx context.Context, l api.Lease) (context.Context, func(outcome string)) {
	return func(ctx context.Context, l api.Lease) (context.Context, func(string)) {
		ctx, span := t.StartRemote(ctx, l.Traceparent, SpanExecute, append(jobAttrs(l.JobID, l.Region),
			attribute.String("strata.workflow", l.Workflow), attribute.Int64("strata.lease_fence", int64(l.LeaseFence)))...)
		if tp := Traceparent(ctx); tp != "" {
			ctx = api.WithTraceparent(ctx, tp)
		}
		return ctx, func(outcome string) {
			span.SetAttributes(attribute.String("strata.outcome", outcome))
			if outcome == "failed" {
				span.SetStatus(codes.Error, "workflow failed")
			}
			span.End()
		}
	}
}
