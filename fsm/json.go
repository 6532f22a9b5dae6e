package fsm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/strata-ledger/strata/hlc"
)

// JSON forms for the API (DESIGN §9). They are not on the apply path.

type eventJSON struct {
	ID     EventID         `json:"id"`
	Type   EventType       `json:"type"`
	JobID  string          `json:"job_id,omitempty"`
	Tenant string          `json:"tenant,omitempty"`
	Region string          `json:"region"`
	Node   string          `json:"node"`
	HLC    hlc.Timestamp   `json:"hlc"`
	Fence  uint64          `json:"fence"`
	Body   json.RawMessage `json:"body"`
	// Stored events only.
	Seq  uint64 `json:"seq,omitempty"`
	Link *Hash  `json:"link,omitempty"`
}

func (e *Event) toJSON() (eventJSON, error) {
	if e.Body == nil {
		return eventJSON{}, fieldErr("body", "missing")
	}
	body, err := json.Marshal(e.Body)
	if err != nil {
		return eventJSON{}, err
	}
	return eventJSON{ID: e.ID, Type: e.Type, JobID: e.JobID, Tenant: e.Tenant, Region: e.Region,
		Node: e.Node, HLC: e.HLC, Fence: e.Fence, Body: body}, nil
}

func (j *eventJSON) toEvent() (Event, error) {
	body := newBody(j.Type)
	if body == nil {
		return Event{}, fieldErr("type", "missing or unknown")
	}
	if err := decodeStrict(j.Body, body); err != nil {
		return Event{}, fmt.Errorf("%s body: %w", j.Type, err)
	}
	return Event{ID: j.ID, Type: j.Type, JobID: j.JobID, Tenant: j.Tenant, Region: j.Region,
		Node: j.Node, HLC: j.HLC, Fence: j.Fence, Body: body}, nil
}

// decodeStrict decodes JSON refusing unknown fields and trailing data.
func decodeStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("%w: trailing JSON", ErrMalformed)
	}
	return nil
}

// MarshalJSON writes {"id", "type", "job_id", "tenant", "region", "node",
// "hlc", "fence", "body"}; the id is hex, the HLC "{wall}:{logical}:{node}".
func (e Event) MarshalJSON() ([]byte, error) {
	j, err := e.toJSON()
	if err != nil {
		return nil, err
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes; unknown fields are refused.
// It does not run Validate. The usual forms take the one-pass reader
// (json_read.go); the rest, errors included, take encoding/json.
func (e *Event) UnmarshalJSON(b []byte) error {
	r := jsonReader{b: b}
	var d Event
	if r.event(&d); r.atEnd() {
		*e = d
		return nil
	}
	return e.unmarshalStandard(b)
}

// unmarshalStandard decodes with encoding/json: it decides for everything
// the one-pass reader does not take, and writes every error.
func (e *Event) unmarshalStandard(b []byte) error {
	var j eventJSON
	if err := decodeStrict(b, &j); err != nil {
		return err
	}
	if j.Seq != 0 || j.Link != nil {
		return fieldErr("seq", "set by the ledger, not by clients")
	}
	d, err := j.toEvent()
	if err != nil {
		return err
	}
	*e = d
	return nil
}

// MarshalJSON writes the event's JSON with "seq" and "link" added.
func (se StoredEvent) MarshalJSON() ([]byte, error) {
	j, err := se.Event.toJSON()
	if err != nil {
		return nil, err
	}
	j.Seq, j.Link = se.Seq, &se.Link
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes (for API clients); BodyHash
// is not on the wire and stays zero.
func (se *StoredEvent) UnmarshalJSON(b []byte) error {
	var j eventJSON
	if err := decodeStrict(b, &j); err != nil {
		return err
	}
	if j.Link == nil {
		return fieldErr("link", "missing on a stored event")
	}
	e, err := j.toEvent()
	if err != nil {
		return err
	}
	*se = StoredEvent{Event: e, Seq: j.Seq, Link: *j.Link}
	return nil
}

type regionJSON struct {
	Status             string `json:"status"`
	Accepted           bool   `json:"accepted"`
	WorkerCount        uint32 `json:"worker_count"`
	Completed          uint64 `json:"completed"`
	Failed             uint64 `json:"failed"`
	Stats              Stats  `json:"stats,omitempty"`
	Done               bool   `json:"done"`
	CancelAcked        bool   `json:"cancel_acked"`
	WorkflowsCancelled uint32 `json:"workflows_cancelled"`
}

type keyJSON struct {
	HLC hlc.Timestamp `json:"hlc"`
	ID  EventID       `json:"id"`
}

type decisionJSON struct {
	Type    EventType       `json:"type"`
	EventID EventID         `json:"event_id"`
	HLC     hlc.Timestamp   `json:"hlc"`
	Fence   uint64          `json:"fence"`
	Node    string          `json:"node"`
	Body    json.RawMessage `json:"body"`
}

type jobJSON struct {
	JobID    string                `json:"job_id"`
	Tenant   string                `json:"tenant"`
	Status   JobStatus             `json:"status"`
	Regions  map[string]regionJSON `json:"regions"`
	Fence    uint64                `json:"fence"`
	HLC      hlc.Timestamp         `json:"hlc"`
	Spec     JobSpec               `json:"spec"`
	Decision *decisionJSON         `json:"decision,omitempty"`
	Pending  *decisionJSON         `json:"pending_completion,omitempty"`
	Created  keyJSON               `json:"created"`
	Last     keyJSON               `json:"last_event"`
	Events   uint32                `json:"events"`
	// Governance (issue 18): the job this one replays (spec.replay_of,
	// repeated at the top for auditors), whether it waits for admission
	// (derived: held and not admitted), whether it was admitted.
	ReplayOf string `json:"replay_of,omitempty"`
	Queued   bool   `json:"queued,omitempty"`
	Admitted bool   `json:"admitted,omitempty"`
}

// MarshalJSON writes the job state of DESIGN §9: {"job_id", "tenant",
// "status", "regions": {"use1": {"status", "completed", "failed", ...}},
// "fence", "hlc", ...}.
func (s JobState) MarshalJSON() ([]byte, error) {
	j := jobJSON{JobID: s.JobID, Tenant: s.Tenant, Status: s.Status, Fence: s.Fence, HLC: s.HLC,
		Spec: s.Spec, Created: keyJSON(s.Created), Last: keyJSON(s.Last), Events: s.Events,
		Regions:  make(map[string]regionJSON, len(s.Regions)),
		ReplayOf: s.Spec.ReplayOf, Queued: s.Queued(), Admitted: s.Admitted}
	for _, r := range s.Regions {
		j.Regions[r.Region] = regionJSON{Status: r.Status(), Accepted: r.Accepted, WorkerCount: r.WorkerCount,
			Completed: r.Completed, Failed: r.Failed, Stats: r.Stats, Done: r.Done,
			CancelAcked: r.CancelAcked, WorkflowsCancelled: r.WorkflowsCancelled}
	}
	var err error
	if j.Decision, err = decisionToJSON(&s.Decision); err != nil {
		return nil, err
	}
	if j.Pending, err = decisionToJSON(&s.Pending); err != nil {
		return nil, err
	}
	return json.Marshal(j)
}

func decisionToJSON(d *Decision) (*decisionJSON, error) {
	if d.Type == 0 {
		return nil, nil
	}
	body, err := json.Marshal(d.Body)
	if err != nil {
		return nil, err
	}
	return &decisionJSON{Type: d.Type, EventID: d.EventID, HLC: d.HLC, Fence: d.Fence, Node: d.Node, Body: body}, nil
}

func decisionFromJSON(field string, d *decisionJSON) (Decision, error) {
	if d == nil {
		return Decision{}, nil
	}
	body := newBody(d.Type)
	if body == nil || !d.Type.IsDecisive() {
		return Decision{}, fieldErr(field+".type", "not a decisive event type")
	}
	if err := json.Unmarshal(d.Body, body); err != nil {
		return Decision{}, fmt.Errorf("%s body: %w", field, err)
	}
	return Decision{Type: d.Type, EventID: d.EventID, HLC: d.HLC, Fence: d.Fence, Node: d.Node, Body: body}, nil
}

// UnmarshalJSON reads what MarshalJSON writes (for API clients).
func (s *JobState) UnmarshalJSON(b []byte) error {
	var j jobJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if len(j.Regions) > MaxRegionsPerJob {
		return &LimitError{Field: "regions", Limit: MaxRegionsPerJob, Got: len(j.Regions)}
	}
	out := JobState{JobID: j.JobID, Tenant: j.Tenant, Status: j.Status, Fence: j.Fence, HLC: j.HLC,
		Spec: j.Spec, Created: EventKey(j.Created), Last: EventKey(j.Last), Events: j.Events, Admitted: j.Admitted}
	for name, r := range j.Regions {
		out.Regions = append(out.Regions, RegionState{Region: name, Accepted: r.Accepted, WorkerCount: r.WorkerCount,
			Completed: r.Completed, Failed: r.Failed, Stats: r.Stats, Done: r.Done,
			CancelAcked: r.CancelAcked, WorkflowsCancelled: r.WorkflowsCancelled})
	}
	slices.SortFunc(out.Regions, func(a, b RegionState) int { return strings.Compare(a.Region, b.Region) })
	var err error
	if out.Decision, err = decisionFromJSON("decision", j.Decision); err != nil {
		return err
	}
	if out.Pending, err = decisionFromJSON("pending_completion", j.Pending); err != nil {
		return err
	}
	if out.Pending.Type != 0 && out.Pending.Type != TypeJobCompleted {
		return fieldErr("pending_completion.type", "not JobCompleted")
	}
	*s = out
	return nil
}
