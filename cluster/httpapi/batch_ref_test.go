package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// The batch decoder as it was before the one-pass reader, kept verbatim
// (errors included) as the reference of FuzzDecodeBatchMatchesReference and
// the baseline of BenchmarkDecodeBatchRequest: encoding/json walks the
// request, then scans every event again into refEvent and its body a third
// time.

func decodeBatchReference(body []byte) ([]fsm.Event, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var events []refEvent
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	seen := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, httpx.JSONError(err, httpx.MaxRequestBytes)
		}
		if key, _ := tok.(string); key != "events" || seen {
			return nil, httpx.BadRequest("unknown or repeated field %v: a batch is {\"events\": [...]}", tok)
		}
		seen = true
		if err := expectDelim(dec, '['); err != nil {
			return nil, err
		}
		for dec.More() {
			if len(events) == fsm.MaxBatchEvents {
				return nil, &httpx.APIError{Status: http.StatusRequestEntityTooLarge, Code: httpx.CodeTooLarge,
					Message: fmt.Sprintf("more than %d events in one batch", fsm.MaxBatchEvents),
					Details: map[string]any{"limit": fsm.MaxBatchEvents}}
			}
			events = append(events, refEvent{})
			if err := dec.Decode(&events[len(events)-1]); err != nil {
				if errors.Is(err, io.EOF) {
					err = errors.New("body is missing")
				}
				return nil, httpx.BadRequest("events[%d]: %v", len(events)-1, err)
			}
		}
		if err := expectDelim(dec, ']'); err != nil {
			return nil, err
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, httpx.BadRequest("request body holds more than one JSON value")
	}
	if len(events) == 0 {
		return nil, httpx.BadRequest("events: empty batch")
	}
	out := make([]fsm.Event, len(events))
	for i := range events {
		out[i] = fsm.Event(events[i])
	}
	return out, nil
}

// refEvent decodes like fsm.Event's UnmarshalJSON did: a strict decode
// into refEventJSON with the body as raw JSON, then a strict decode of
// the body.
type refEvent fsm.Event

type refEventJSON struct {
	ID     fsm.EventID     `json:"id"`
	Type   fsm.EventType   `json:"type"`
	JobID  string          `json:"job_id,omitempty"`
	Tenant string          `json:"tenant,omitempty"`
	Region string          `json:"region"`
	Node   string          `json:"node"`
	HLC    hlc.Timestamp   `json:"hlc"`
	Fence  uint64          `json:"fence"`
	Body   json.RawMessage `json:"body"`
	Seq    uint64          `json:"seq,omitempty"`
	Link   *fsm.Hash       `json:"link,omitempty"`
}

func (e *refEvent) UnmarshalJSON(b []byte) error {
	var j refEventJSON
	if err := refDecodeStrict(b, &j); err != nil {
		return err
	}
	if j.Seq != 0 || j.Link != nil {
		return &fsm.FieldError{Field: "seq", Reason: "set by the ledger, not by clients"}
	}
	body := refNewBody(j.Type)
	if body == nil {
		return &fsm.FieldError{Field: "type", Reason: "missing or unknown"}
	}
	if err := refDecodeStrict(j.Body, body); err != nil {
		return fmt.Errorf("%s body: %w", j.Type, err)
	}
	*e = refEvent{ID: j.ID, Type: j.Type, JobID: j.JobID, Tenant: j.Tenant, Region: j.Region,
		Node: j.Node, HLC: j.HLC, Fence: j.Fence, Body: body}
	return nil
}

func refDecodeStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("%w: trailing JSON", fsm.ErrMalformed)
	}
	return nil
}

func refNewBody(t fsm.EventType) fsm.Body {
	switch t {
	case fsm.TypeJobAdmitted:
		return new(fsm.JobAdmitted)
	case fsm.TypePolicySet:
		return new(fsm.PolicySet)
	case fsm.TypePolicyDeleted:
		return new(fsm.PolicyDeleted)
	case fsm.TypeJobCreated:
		return new(fsm.JobCreated)
	case fsm.TypeJobAccepted:
		return new(fsm.JobAccepted)
	case fsm.TypeJobProgressReported:
		return new(fsm.JobProgressReported)
	case fsm.TypeJobCancellationRequested:
		return new(fsm.JobCancellationRequested)
	case fsm.TypeJobCancellationAcked:
		return new(fsm.JobCancellationAcked)
	case fsm.TypeJobCompleted:
		return new(fsm.JobCompleted)
	case fsm.TypeJobFailed:
		return new(fsm.JobFailed)
	case fsm.TypeJobTimedOut:
		return new(fsm.JobTimedOut)
	case fsm.TypeWorkflowDispatched:
		return new(fsm.WorkflowDispatched)
	case fsm.TypeWorkflowLeased:
		return new(fsm.WorkflowLeased)
	case fsm.TypeWorkflowProgress:
		return new(fsm.WorkflowProgress)
	case fsm.TypeWorkflowCompleted:
		return new(fsm.WorkflowCompleted)
	case fsm.TypeWorkflowFailed:
		return new(fsm.WorkflowFailed)
	case fsm.TypeWorkflowRescheduled:
		return new(fsm.WorkflowRescheduled)
	case fsm.TypeWorkflowCancelled:
		return new(fsm.WorkflowCancelled)
	case fsm.TypeWorkerJoined:
		return new(fsm.WorkerJoined)
	case fsm.TypeWorkerLeft:
		return new(fsm.WorkerLeft)
	case fsm.TypeForwardMark:
		return new(fsm.ForwardMark)
	}
	return nil
}
