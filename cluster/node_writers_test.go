package cluster

import (
	"net/http"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// Who may write what (issue 17 finding 1, subnet 222): a client token
// writes only submits and cancels, stamped by the node; system events
// come from nodes and from the worker that holds the lease.

// Finding 1: a tenant cannot forge a system event (a COMPLETED decision
// attributed to a gate, with a 1970 HLC), cannot set the origin of the
// events it may write, and cannot pass a spec over the submit limits; the
// job stays as it was.
func TestFinding1_ClientTokensWriteOnlyClientEvents(t *testing.T) {
	c := startTestCluster(t, 222)
	r := c.submitJob("g1", "", "")
	var sub api.SubmitJobResponse
	r.decode(t, &sub)
	if r.status != http.StatusCreated {
		t.Fatalf("submit: %d %s", r.status, r.body)
	}
	batch := func(events ...string) []byte { return []byte(`{"events":[` + strings.Join(events, ",") + `]}`) }
	spec := `{"tenant":"acme","regions":["use1"],"timeout":"10m","workflows":[{"name":"w","count":1,"duration":"1s","rate":RATE,"failure_ratio":0}]}`
	created := func(extra, rate string) string {
		return `{"type":"JobCreated","tenant":"acme"` + extra + `,"body":{"spec":` + strings.Replace(spec, "RATE", rate, 1) + `}}`
	}
	forged := `{"type":"JobCompleted","job_id":"` + sub.JobID + `","tenant":"acme","node":"g1","region":"mars","hlc":"1:0:1","fence":9,` +
		`"body":{"final_status":"COMPLETED","aggregate":{"completed":1,"failed":0}}}`
	refused := []struct {
		name   string
		body   []byte
		status int
		field  string // details.field, if the refusal names one
	}{
		{"forged decision", batch(forged), http.StatusForbidden, ""},
		{"a valid submit cannot carry a forged decision", batch(created("", "10"), forged), http.StatusForbidden, ""},
		{"progress", batch(`{"type":"JobProgressReported","job_id":"` + sub.JobID + `","tenant":"acme","body":{"region":"use1","completed":1000000000,"failed":0}}`), http.StatusForbidden, ""},
		{"worker event", batch(`{"type":"WorkerJoined","body":{"worker":"w9","capacity":1}}`), http.StatusForbidden, ""},
		{"node", batch(created(`,"node":"g1"`, "10")), http.StatusBadRequest, "node"},
		{"hlc", batch(created(`,"hlc":"1:0:1"`, "10")), http.StatusBadRequest, "hlc"},
		{"region", batch(created(`,"region":"mars"`, "10")), http.StatusBadRequest, "region"},
		{"fence", batch(created(`,"fence":18446744073709551615`, "10")), http.StatusBadRequest, "fence"},
		{"job id", batch(created(`,"job_id":"`+sub.JobID+`"`, "10")), http.StatusBadRequest, "job_id"},
		{"rate", batch(created("", "1e308")), http.StatusBadRequest, ""},
	}
	for _, tt := range refused {
		r := c.call("g1", "POST", "/v1/events:batch", testAcmeToken, tt.body)
		if r.status != tt.status {
			t.Fatalf("%s: %d %s, want %d", tt.name, r.status, r.body, tt.status)
		}
		if ae := r.apiError(t); tt.field != "" && ae.Details["field"] != tt.field {
			t.Fatalf("%s: details %v, want field %s", tt.name, ae.Details, tt.field)
		}
	}
	var job fsm.JobState
	r = c.call("g1", "GET", "/v1/jobs/"+sub.JobID+"?consistency=strong", testAcmeToken, nil)
	r.decode(t, &job)
	if r.status != http.StatusOK || job.Status != fsm.JobStatusPending || job.Events != 1 {
		t.Fatalf("after the refused batches the job is %s with %d events, want PENDING with 1", job.Status, job.Events)
	}

	// What a client may write, it writes with the gate's origin and id.
	r = c.call("g2", "POST", "/v1/events:batch", testAcmeToken, batch(created("", "10")))
	var br api.BatchResponse
	r.decode(t, &br)
	if r.status != http.StatusOK || len(br.Results) != 1 || br.Results[0].Outcome != "applied" || br.Results[0].JobID == "" {
		t.Fatalf("client submit: %d %s", r.status, r.body)
	}
	var events api.EventList
	r = c.call("g2", "GET", "/v1/jobs/"+br.Results[0].JobID+"/events?consistency=strong", testAcmeToken, nil)
	r.decode(t, &events)
	if len(events.Events) != 1 {
		t.Fatalf("events of the client's job: %s", r.body)
	}
	e := events.Events[0]
	if e.Node != "g2" || e.Region != "use1" || e.Fence != 1 || e.HLC.WallMs < job.HLC.WallMs {
		t.Fatalf("client's JobCreated stamped %s/%s fence %d at %s, want g2/use1 fence 1 after %s", e.Node, e.Region, e.Fence, e.HLC, job.HLC)
	}

	// A cancel of another tenant's job is "not found", as a read is.
	r = c.call("g1", "POST", "/v1/events:batch", testGlobexToken,
		batch(`{"type":"JobCancellationRequested","job_id":"`+sub.JobID+`","body":{"reason":"x","requestor":"y"}}`))
	if r.status != http.StatusNotFound || strings.Contains(string(r.body), "acme") {
		t.Fatalf("cancel of another tenant's job: %d %s", r.status, r.body)
	}
	// Its own cancel goes through, with the job's next fence.
	r = c.call("g1", "POST", "/v1/events:batch", testAcmeToken,
		batch(`{"type":"JobCancellationRequested","job_id":"`+sub.JobID+`","body":{"reason":"x","requestor":"y"}}`))
	r.decode(t, &br)
	if r.status != http.StatusOK || br.Results[0].Outcome != "applied" {
		t.Fatalf("own cancel: %d %s", r.status, r.body)
	}
}

// A worker token acts only for the worker it is bound to: it registers
// that worker (by name or by default) and no other, and cannot poll or
// report for another worker's leases.
func TestWorkerTokensActOnlyForTheirWorker(t *testing.T) {
	c := startTestCluster(t, 223)
	r := c.call("m1", "POST", "/v1/workers", testWorkerToken, []byte(`{"worker_id":"w-other","region":"use1","capacity":1}`))
	if r.status != http.StatusForbidden || r.apiError(t).Code != httpx.CodeForbidden {
		t.Fatalf("register another worker: %d %s", r.status, r.body)
	}
	var reg api.RegisterWorkerResponse
	r = c.call("m1", "POST", "/v1/workers", testWorkerToken, []byte(`{"region":"use1","capacity":1}`))
	r.decode(t, &reg)
	if r.status/100 != 2 || reg.WorkerID != "w-bound" {
		t.Fatalf("register own worker: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/v1/workers/w-other/heartbeat", "/v1/workers/w-other/progress"} {
		if r := c.call("m1", "POST", path, testWorkerToken, []byte(`{}`)); r.status != http.StatusForbidden {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
	}
	if r := c.call("m1", "GET", "/v1/workers/w-other/leases?wait=0s", testWorkerToken, nil); r.status != http.StatusForbidden {
		t.Fatalf("leases of another worker: %d %s", r.status, r.body)
	}
	if r := c.call("m1", "POST", "/v1/workers/w-bound/heartbeat", testWorkerToken, []byte(`{}`)); r.status != http.StatusOK {
		t.Fatalf("own heartbeat: %d %s", r.status, r.body)
	}
	// A tenant's token is no worker token, even with jobs:write.
	if r := c.call("m1", "POST", "/v1/workers/w-bound/heartbeat", testAcmeToken, []byte(`{}`)); r.status != http.StatusForbidden {
		t.Fatalf("tenant heartbeat: %d %s", r.status, r.body)
	}
}
