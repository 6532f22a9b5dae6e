package api

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/strata-ledger/strata/bundle"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// The OpenAPI document (openapi.json) on its own: valid OpenAPI 3.1, every
// error answer the envelope, the public operations exactly those served
// without a token, its examples and the Go wire types valid against its
// schemas. cluster/httpapi checks it against the routes, cluster against
// real answers.

// openAPIModel loads the document with libopenapi and builds its model
// (every $ref resolved).
func openAPIModel(t *testing.T) (libopenapi.Document, *v3.Document) {
	t.Helper()
	doc, err := libopenapi.NewDocument(OpenAPI())
	if err != nil {
		t.Fatalf("load the OpenAPI document: %v", err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("build the OpenAPI model: %v", err)
	}
	return doc, &m.Model
}

func TestOpenAPI_IsValidOpenAPI31(t *testing.T) {
	doc, m := openAPIModel(t)
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", v)
	}
	if m.Info == nil || m.Info.Version != "v1" {
		t.Errorf("info.version is not v1")
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("not valid OpenAPI 3.1: %s: %s (line %d)", e.Message, e.Reason, e.SpecLine)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  %s at %s (%s)", se.Reason, se.FieldPath, se.KeywordLocation)
			}
		}
	}
}

// rawDoc is the document as plain JSON.
type rawDoc struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Responses map[string]rawResponse `json:"responses"`
	} `json:"components"`
}

type rawOperation struct {
	OperationID string                     `json:"operationId"`
	Security    *[]map[string][]string     `json:"security"`
	Responses   map[string]json.RawMessage `json:"responses"`
}

type rawResponse struct {
	Ref     string `json:"$ref"`
	Content map[string]struct {
		Schema struct {
			Ref string `json:"$ref"`
		} `json:"schema"`
	} `json:"content"`
}

// operations calls fn with every operation of the document.
func operations(t *testing.T, fn func(id string, op rawOperation, responses map[string]rawResponse)) rawDoc {
	t.Helper()
	var d rawDoc
	if err := json.Unmarshal(OpenAPI(), &d); err != nil {
		t.Fatal(err)
	}
	for path, item := range d.Paths {
		for method, raw := range item {
			if method == "parameters" || method == "summary" || method == "description" {
				continue
			}
			var op rawOperation
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			rs := map[string]rawResponse{}
			for code, rr := range op.Responses {
				var r rawResponse
				if err := json.Unmarshal(rr, &r); err != nil {
					t.Fatalf("%s %s %s: %v", method, path, code, err)
				}
				if name, ok := strings.CutPrefix(r.Ref, "#/components/responses/"); ok {
					r, ok = d.Components.Responses[name]
					if !ok {
						t.Fatalf("%s %s %s: no response %s", method, path, code, name)
					}
				}
				rs[code] = r
			}
			fn(strings.ToUpper(method)+" "+path, op, rs)
		}
	}
	return d
}

func TestOpenAPI_ErrorsAreTheEnvelope(t *testing.T) {
	ids := map[string]string{}
	errorsSeen := 0
	operations(t, func(id string, op rawOperation, rs map[string]rawResponse) {
		if op.OperationID == "" {
			t.Errorf("%s has no operationId", id)
		} else if other, dup := ids[op.OperationID]; dup {
			t.Errorf("%s and %s share operationId %s", id, other, op.OperationID)
		}
		ids[op.OperationID] = id
		if len(rs) == 0 {
			t.Errorf("%s has no responses", id)
		}
		for code, r := range rs {
			if code < "400" || id == "GET /readyz" { // /readyz's 503 is a Health body
				continue
			}
			errorsSeen++
			if len(r.Content) != 1 || r.Content["application/json"].Schema.Ref != "#/components/schemas/ErrorEnvelope" {
				t.Errorf("%s answers %s without the error envelope", id, code)
			}
		}
	})
	if errorsSeen < 100 {
		t.Errorf("only %d error answers: the walk found too few", errorsSeen)
	}
}

// The operations served without a token, as routes.go registers them
// (access public, and /metrics).
var publicOperations = []string{"GET /.well-known/openapi", "GET /livez", "GET /metrics", "GET /readyz", "GET /v1/openapi.json"}

// The operations any valid token may call, whatever its scopes: their
// bearerAuth names no scope.
var anyTokenOperations = []string{"GET /v1/auth/whoami"}

func TestOpenAPI_Security(t *testing.T) {
	var public []string
	operations(t, func(id string, op rawOperation, rs map[string]rawResponse) {
		switch {
		case op.Security == nil:
			t.Errorf("%s says nothing of its security", id)
		case len(*op.Security) == 0:
			public = append(public, id)
			if _, ok := rs["401"]; ok {
				t.Errorf("%s is public but answers 401", id)
			}
		default:
			scopes, ok := (*op.Security)[0]["bearerAuth"]
			if len(*op.Security) != 1 || !ok || (len(scopes) == 0 && !slices.Contains(anyTokenOperations, id)) {
				t.Errorf("%s: security %v, want one bearerAuth with its scope", id, *op.Security)
			}
			for _, code := range []string{"401", "403"} {
				if _, ok := rs[code]; !ok {
					t.Errorf("%s needs a token but does not answer %s", id, code)
				}
			}
		}
	})
	slices.Sort(public)
	if !slices.Equal(public, publicOperations) {
		t.Errorf("public operations %v, want %v", public, publicOperations)
	}
}

// schemaOf returns the component schema name.
func schemaOf(t *testing.T, m *v3.Document, name string) *base.Schema {
	t.Helper()
	sp, ok := m.Components.Schemas.Get(name)
	if !ok {
		t.Fatalf("no schema %s", name)
	}
	s := sp.Schema()
	if s == nil {
		t.Fatalf("schema %s: %v", name, sp.GetBuildError())
	}
	return s
}

func checkAgainst(t *testing.T, sv schema_validation.SchemaValidator, where string, s *base.Schema, payload []byte) {
	t.Helper()
	if ok, errs := sv.ValidateSchemaBytes(s, payload); !ok {
		for _, e := range errs {
			t.Errorf("%s: %s: %s", where, e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  %s at %s (%s)", se.Reason, se.FieldPath, se.KeywordLocation)
			}
		}
	}
}

func nodeJSON(t *testing.T, n *yaml.Node) []byte {
	t.Helper()
	var v any
	if err := n.Decode(&v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every example of the document is valid against its schema.
func TestOpenAPI_ExamplesMatchSchemas(t *testing.T) {
	_, m := openAPIModel(t)
	sv := schema_validation.NewSchemaValidator()
	checked := 0
	media := func(where string, mt *v3.MediaType) {
		if mt.Schema == nil || !strings.Contains(where, "json") {
			return
		}
		s := mt.Schema.Schema()
		if mt.Example != nil {
			checked++
			checkAgainst(t, sv, where+" example", s, nodeJSON(t, mt.Example))
		}
		if mt.Examples != nil {
			for name, ex := range mt.Examples.FromOldest() {
				checked++
				checkAgainst(t, sv, where+" example "+name, s, nodeJSON(t, ex.Value))
			}
		}
	}
	for path, item := range m.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			if op.RequestBody != nil {
				for ct, mt := range op.RequestBody.Content.FromOldest() {
					media(fmt.Sprintf("%s %s request %s", method, path, ct), mt)
				}
			}
			for code, r := range op.Responses.Codes.FromOldest() {
				for ct, mt := range r.Content.FromOldest() {
					media(fmt.Sprintf("%s %s %s %s", method, path, code, ct), mt)
				}
			}
		}
	}
	for name, sp := range m.Components.Schemas.FromOldest() {
		s := sp.Schema()
		for i, ex := range s.Examples {
			checked++
			checkAgainst(t, sv, fmt.Sprintf("schema %s example %d", name, i), s, nodeJSON(t, ex))
		}
	}
	if checked < 20 {
		t.Errorf("only %d examples checked", checked)
	}
	t.Logf("%d examples valid", checked)
}

// The Go types of the wire, filled, are valid against their schemas: the
// members omitted when empty (a job's decision and pending completion,
// its live statistics, a refusal) included, which the real answers of
// cluster's test rarely have.
func TestOpenAPI_WireTypesMatchSchemas(t *testing.T) {
	_, m := openAPIModel(t)
	sv := schema_validation.NewSchemaValidator()
	ts := hlc.Timestamp{WallMs: 1764081234567, Logical: 2, Node: 3}
	id := fsm.EventID{1, 2, 3}
	spec := fsm.JobSpec{Tenant: "acme", IdempotencyKey: "k1", Regions: []string{"use1", "euw1"}, Timeout: fsm.Duration(10 * time.Minute),
		Workflows: []fsm.WorkflowSpec{{Name: "checkout", Count: 4, Duration: fsm.Duration(30 * time.Second), Rate: 200, FailureRatio: 0.1}}}
	stats := fsm.Stats{{Name: "errors", Value: 3}, {Name: "requests", Value: 1200}}
	job := fsm.JobState{JobID: "use1-1764081234567-g1-00001", Tenant: "acme", Status: fsm.JobStatusCancelling, Fence: 3, HLC: ts, Spec: spec,
		Regions: []fsm.RegionState{{Region: "use1", Accepted: true, WorkerCount: 2, Completed: 10, Failed: 1, Stats: stats},
			{Region: "euw1", Done: true, CancelAcked: true, WorkflowsCancelled: 4}},
		Decision: fsm.Decision{Type: fsm.TypeJobCancellationRequested, EventID: id, HLC: ts, Fence: 2, Node: "g1",
			Body: &fsm.JobCancellationRequested{Reason: "stop", Requestor: "alice"}},
		Pending: fsm.Decision{Type: fsm.TypeJobCompleted, EventID: id, HLC: ts, Fence: 2, Node: "g2",
			Body: &fsm.JobCompleted{FinalStatus: "COMPLETED", Aggregate: fsm.Aggregate{Completed: 10, Stats: stats}}},
		Created: fsm.EventKey{HLC: ts, ID: id}, Last: fsm.EventKey{HLC: ts, ID: id}, Events: 7}
	jobJSON, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	live, _ := json.Marshal(JobLive{"use1": {RequestsPerS: 412.5, FailedPerS: 1, P50Ms: 3.2, P99Ms: 15.1, WindowMs: 5000, AsOf: 1764081234567, Managers: 2}})
	withLive := append(append(append(jobJSON[:len(jobJSON)-1:len(jobJSON)-1], `,"live":`...), live...), '}')
	refused := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	events := []fsm.StoredEvent{}
	for _, b := range []fsm.Body{&fsm.JobCreated{Spec: spec, AssignedRegions: []string{"use1"}}, &fsm.JobAccepted{Region: "use1", WorkerCount: 2},
		&fsm.JobProgressReported{Region: "use1", Completed: 5, Stats: stats, Done: true}, &fsm.JobFailed{Error: "boom", FailedRegion: "use1"},
		&fsm.JobTimedOut{TimeoutType: "job", LastProgressHLC: ts}, &fsm.WorkflowLeased{Workflow: "w", Worker: "w-1", LeaseUntilMs: 5, LeaseFence: 1},
		&fsm.WorkerJoined{Worker: "w-1", Capacity: 4}, &fsm.ForwardMark{Marks: []fsm.ForwardPosition{{Tenant: "acme", Seq: 4}}}} {
		e := fsm.Event{ID: id, Type: b.EventType(), Region: "use1", Node: "g1", HLC: ts, Fence: 1, Body: b}
		if !b.EventType().IsJobless() {
			e.JobID, e.Tenant = job.JobID, "acme"
		}
		events = append(events, fsm.StoredEvent{Event: e, Seq: uint64(len(events) + 1), Link: fsm.Hash{9}})
	}
	for _, c := range []struct {
		schema string
		v      any
	}{
		{"JobState", json.RawMessage(jobJSON)},
		{"JobState", json.RawMessage(withLive)},
		{"JobList", JobList{Jobs: []*fsm.JobState{&job}, NextCursor: "abc"}},
		{"EventList", EventList{Events: events, NextCursor: "abc"}},
		{"BatchRequest", BatchRequest{Events: []fsm.Event{events[0].Event, events[5].Event}}},
		{"WriteStatus", WriteStatus{Write: "g1/5", Node: "g1", LSN: 5, Status: WriteRefused, Durability: "LOCAL", HLC: ts,
			Events: []fsm.EventID{id}, Reason: "invalid", RefusedAt: &refused}},
		{"SubmitJobResponse", SubmitJobResponse{JobID: job.JobID, WriteResponse: WriteResponse{Durability: "LOCAL", HLC: ts, Write: "g1/5"}}},
		{"BatchResponse", BatchResponse{WriteResponse: WriteResponse{Durability: "GLOBAL", HLC: ts, Session: "global:4"},
			Results: []EventResult{{ID: id, JobID: job.JobID, Outcome: "applied", Seq: 4}, {ID: id, Outcome: "rejected", Error: &Error{Code: "conflict", Message: "x"}}}}},
		{"RegisterWorkerResponse", RegisterWorkerResponse{WorkerID: "w-1", Region: "use1", Capacity: 4, AckWindow: fsm.Duration(5 * time.Second),
			HeartbeatInterval: fsm.Duration(5 * time.Second / 3), DataPlane: &DataPlaneAccess{UDPAddr: "a:1", TCPAddr: "a:1", KeyID: 7, Key: "a2V5"},
			WriteResponse: WriteResponse{Durability: "REGIONAL", HLC: ts, Session: "use1:3"}}},
		{"HeartbeatResponse", HeartbeatResponse{Stop: []string{"w"}, Backpressure: BackpressureThrottle, AckWindow: fsm.Duration(time.Second),
			Recorded: []RecordedProgress{{Workflow: "w", LeaseFence: 1, Completed: 2}}}},
		{"LeaseList", LeaseList{Index: 3, Leases: []Lease{{Workflow: "w", JobID: job.JobID, Tenant: "acme", Region: "use1", Name: "checkout",
			Spec: spec.Workflows[0], LeaseFence: 1, LeaseUntil: 5}}}},
		{"WorkerReportResponse", WorkerReportResponse{Results: []WorkerReportResult{{Workflow: "w", Outcome: "rejected", Code: "stale_fence", Message: "x"}},
			WriteResponse: WriteResponse{Durability: "LOCAL", HLC: ts}}},
		{"WorkflowList", WorkflowList{Region: "use1", Workflows: []fsm.WorkflowState{{ID: "w", JobID: job.JobID, Tenant: "acme", Region: "use1",
			Name: "checkout", Spec: spec.Workflows[0], Status: fsm.WorkflowStatusLeased, Worker: "w-1", LeaseUntilMs: 4, LeaseFence: 1, Stats: stats, Error: "x", HLC: ts}}}},
		{"RaftStatus", RaftStatus{Node: "m1", Groups: []RaftGroup{{Name: "use1", Tier: "REGIONAL", State: "Leader", Peers: []RaftPeer{{ID: "m1", Suffrage: "voter"}},
			Watermarks: map[string]uint64{"last": 3, "regional": 2, "global": 1, "applied": 1, "compacted": 0, "tier": 2}, Forwarder: &ForwarderStatus{Breaker: "open", HalfOpenAt: "x", QueueDepth: 2, OldestQueuedHLC: "1:0:1", LastError: "y"}}}}},
		{"MemberList", MemberList{Node: "g1", Members: []Member{{NodeID: "g1", Role: "gate", Region: "use1", DataAddr: "x", Pools: map[string]string{"lan": "alive"}}}}},
		{"AntiEntropyStatus", AntiEntropyStatus{Pairs: []AntiEntropyPair{{Kind: AntiEntropyReplica, Group: "global", Error: "x"}}, DivergentReplicas: []string{}, Unreachable: []string{"m2"}}},
		{"ChainVerification", ChainVerification{Tenant: "acme", Seq: 3, Link: fsm.Hash{1}.String(), Verified: true, Events: 3, Next: 3}},
		{"CheckpointList", CheckpointList{Checkpoints: []bundle.SignedCheckpoint{{Checkpoint: bundle.Checkpoint{Tenant: "acme", FirstSeq: 1, LastSeq: 1000},
			KeyID: "k", Signature: []byte{1, 2}}}, Next: 1000}},
		{"Proof", bundle.Proof{Seq: 3, Path: []fsm.Hash{{1}}, Batch: bundle.SignedCheckpoint{Checkpoint: bundle.Checkpoint{Tenant: "acme", FirstSeq: 1, LastSeq: 1000}, KeyID: "k", Signature: []byte{1}},
			Event: &bundle.ProofEvent{ID: fsm.EventID{1}, HLC: ts, JobID: job.JobID, Type: fsm.TypeJobCreated, Body: []byte{1, 2}}}},
		{"ImportResponse", ImportResponse{Tenant: "acme", BundleID: "b", Entries: 3, Signers: []string{"k"}, Forced: "x", Applied: 3}},
		{"ErrorEnvelope", ErrorEnvelope{Error: &Error{Code: CodeTooLarge, Message: "x", Details: map[string]any{"limit_bytes": 1}}}},
	} {
		b, err := json.Marshal(c.v)
		if err != nil {
			t.Fatalf("%s: %v", c.schema, err)
		}
		checkAgainst(t, sv, c.schema+" "+string(b), schemaOf(t, m, c.schema), b)
	}
}
