package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// Mapping of the ledger's and the pipeline's errors to HTTP statuses and
// the envelope's codes.

// eventError maps an event's validation or apply error: limits are 413,
// invalid fields 400, conflicts with the ledger's state 409, unknown
// subjects 404.
func eventError(err error) error {
	var ae *httpx.APIError
	if errors.As(err, &ae) {
		return ae
	}
	status, code := http.StatusBadRequest, httpx.CodeBadRequest
	details := map[string]any{}
	var fe *fsm.FieldError
	var le *fsm.LimitError
	switch {
	case errors.As(err, &le):
		status, code = http.StatusRequestEntityTooLarge, httpx.CodeTooLarge
		details["field"], details["limit"] = le.Field, le.Limit
	case errors.As(err, &fe):
		details["field"] = fe.Field
	case errors.Is(err, fsm.ErrEventConflict), errors.Is(err, fsm.ErrJobExists), errors.Is(err, fsm.ErrWorkflowExists),
		errors.Is(err, fsm.ErrWorkerExists), errors.Is(err, fsm.ErrIllegalTransition), errors.Is(err, fsm.ErrStaleFence),
		errors.Is(err, fsm.ErrTerminal), errors.Is(err, fsm.ErrWorkerMismatch):
		status, code = http.StatusConflict, httpx.CodeConflict
	case errors.Is(err, fsm.ErrUnknownJob), errors.Is(err, fsm.ErrUnknownWorkflow), errors.Is(err, fsm.ErrUnknownWorker):
		status, code = http.StatusNotFound, httpx.CodeNotFound
	}
	if len(details) == 0 {
		details = nil
	}
	return &httpx.APIError{Status: status, Code: code, Message: err.Error(), Details: details}
}

// resultError is the error of a one-event write whose event was rejected.
func resultError(res commit.SubmitResult) error {
	for _, r := range res.Results {
		if r.Outcome == fsm.OutcomeRejected {
			return eventError(r.Err)
		}
	}
	return nil
}

// submitError maps a failed Submit. Before the NodeWAL nothing happened;
// after it, the write holds at res.Level and keeps climbing, which the
// message says so that a client knows a retry is safe but not needed, and
// names the write (node/lsn) whose status GET /v1/writes/{node}/{lsn}
// answers.
func submitError(err error, res commit.SubmitResult, node string) error {
	switch {
	case errors.Is(err, group.ErrBackpressure):
		return &httpx.APIError{Status: http.StatusTooManyRequests, Code: httpx.CodeUnavailable, Message: err.Error()}
	case errors.Is(err, group.ErrInvalidBatch):
		return eventError(err)
	case errors.Is(err, group.ErrClosed):
		return &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable, Message: "node is shutting down"}
	case res.Level >= commit.DurabilityLocal:
		return &httpx.APIError{Status: http.StatusGatewayTimeout, Code: httpx.CodeTimeout,
			Message: fmt.Sprintf("write %s is %s and still climbing to its tier (GET /v1/writes/%[1]s follows it): %[3]v",
				api.WriteRef(node, uint64(res.LSN)), res.Level, err),
			Details: map[string]any{"durability": res.Level.String(), "lsn": uint64(res.LSN), "write": api.WriteRef(node, uint64(res.LSN))}}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return &httpx.APIError{Status: http.StatusGatewayTimeout, Code: httpx.CodeTimeout, Message: err.Error()}
	}
	return &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable, Message: err.Error()}
}

// readError maps a ledger read's error.
func readError(err error) error {
	switch {
	case errors.Is(err, fsm.ErrInvalidCursor):
		return httpx.BadRequest("%v", err)
	case errors.Is(err, fsm.ErrNotFound):
		return &httpx.APIError{Status: http.StatusNotFound, Code: httpx.CodeNotFound, Message: err.Error()}
	case errors.Is(err, fsm.ErrInvalidEvent), errors.Is(err, fsm.ErrLimit):
		return httpx.BadRequest("%v", err)
	}
	return err
}

// parseLimit reads limit= of a list.
func parseLimit(s string) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 || v > fsm.MaxListLimit {
		return 0, httpx.BadRequest("limit %q must be 1..%d", s, fsm.MaxListLimit)
	}
	return v, nil
}
