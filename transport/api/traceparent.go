package api

import "context"

// HeaderTraceparent carries the W3C trace context of a call (issue 18 §4):
// the node continues the caller's trace, and the job a submit creates
// keeps it, so the spans of its dispatch, leases, execution and completion
// join the caller's trace.
const HeaderTraceparent = "traceparent"

type traceparentKey struct{}

// WithTraceparent returns ctx whose calls through a Client send tp as
// their traceparent header (the CLI takes it from $TRACEPARENT, a worker
// from its execution span). The value is sent as given; nodes ignore a
// malformed one.
func WithTraceparent(ctx context.Context, tp string) context.Context {
	if tp == "" {
		return ctx
	}
	return context.WithValue(ctx, traceparentKey{}, tp)
}
