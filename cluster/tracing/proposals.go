package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/strata-ledger/strata/fsm"
)

// ProposeFunc proposes planned events to the node's group and returns
// their results (cluster/lifecycle's Submitter).
type ProposeFunc func(ctx context.Context, events []fsm.Event) ([]fsm.Result, error)

// spanOfType names the span a planned event of this type belongs to;
// other types are not traced (their steps are requests of their own).
func spanOfType(t fsm.EventType) string {
	switch t {
	case fsm.TypeWorkflowDispatched:
		return SpanDispatch
	case fsm.TypeWorkflowLeased:
		return SpanLease
	case fsm.TypeJobCompleted, fsm.TypeJobFailed, fsm.TypeJobTimedOut:
		return SpanComplete
	}
	return ""
}

// Proposals wraps next so the reconcilers' steps of a job — its
// workflows dispatched in a region, each lease, its terminal decision —
// are spans of the job's trace: one span per (job, step) of a proposal,
// a child of the job's recorded trace context (traceparentOf; "" leaves
// that job untraced), from the proposal to its results. With tracing off
// it returns next itself.
func (t *Tracer) Proposals(next ProposeFunc, region string, traceparentOf func(jobID string) string) ProposeFunc {
	if t == nil || t.tp == nil || !t.sdk() {
		return next
	}
	return func(ctx context.Context, events []fsm.Event) ([]fsm.Result, error) {
		type step struct{ job, name string }
		spans := map[step]trace.Span{}
		count := map[step]int{}
		var order []step
		for i := range events {
			e := &events[i]
			name := spanOfType(e.Type)
			if name == "" {
				continue
			}
			k := step{e.JobID, name}
			count[k]++
			if _, ok := spans[k]; ok {
				continue
			}
			tp := traceparentOf(e.JobID)
			if tp == "" {
				spans[k] = nil
				continue
			}
			_, s := t.StartRemote(ctx, tp, name, jobAttrs(e.JobID, region)...)
			spans[k] = s
			order = append(order, k)
		}
		res, err := next(ctx, events)
		applied := map[step]int{}
		for i := range events {
			if i < len(res) && res[i].Outcome == fsm.OutcomeApplied {
				applied[step{events[i].JobID, spanOfType(events[i].Type)}]++
			}
		}
		for _, k := range order {
			s := spans[k]
			s.SetAttributes(attribute.Int("strata.events", count[k]), attribute.Int("strata.applied", applied[k]))
			Fail(s, err)
			s.End()
		}
		return res, err
	}
}
