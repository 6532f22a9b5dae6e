package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	liberrors "github.com/pb33f/libopenapi-validator/errors"

	"github.com/strata-ledger/strata/transport/api"
)

// Real answers against the OpenAPI document (transport/api/openapi.json):
// one cluster (subnet 124, reconcilers on, so a registered worker is
// leased the job's workflows), a sample of calls of every kind, and each
// answer validated by libopenapi-validator against the operation the
// document gives its method and path: status, content type, headers and
// body, in strict mode (a member the schema does not declare fails it).
// The requests of successful calls are validated too.

type openAPICheck struct {
	t *testing.T
	c *testCluster
	v validator.Validator
	// loose validates without strict mode: the document's own answer,
	// whose schema leaves the OpenAPI object's members free.
	loose validator.Validator
	// seen counts the operations answered and checked, by "METHOD status".
	seen map[string]int
}

func newOpenAPICheck(t *testing.T, c *testCluster) *openAPICheck {
	t.Helper()
	doc, err := libopenapi.NewDocument(api.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	// Event bodies are free-form where the document does not know the
	// event's type (a job's decision; the type-by-type body schemas are
	// if/then rules, which strict mode does not walk).
	v, errs := validator.NewValidator(doc, config.WithStrictMode(), config.WithStrictIgnorePaths(
		"$.body.decision.body.**", "$.body.pending_completion.body.**",
		"$.body.jobs[*].decision.body.**", "$.body.jobs[*].pending_completion.body.**", "$.body.events[*].body.**"))
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	loose, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	return &openAPICheck{t: t, c: c, v: v, loose: loose, seen: map[string]int{}}
}

// call sends one request to node and validates the answer, which must
// have status want (a 503 of an election on a loaded machine is retried).
// validRequest says the request itself is a valid one (error samples send
// invalid requests on purpose).
func (o *openAPICheck) call(node, method, path, token string, body []byte, want int, validRequest bool, header ...string) reply {
	o.t.Helper()
	build := func() *http.Request {
		req, err := http.NewRequestWithContext(context.Background(), method, "http://"+o.c.cfg(node).HTTPAddr+path, bytes.NewReader(body))
		if err != nil {
			o.t.Fatal(err)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		return req
	}
	var resp *http.Response
	var raw []byte
	deadline := time.Now().Add(nodeTestWait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), nodeTestWait)
		var err error
		resp, err = o.c.http.Do(build().WithContext(ctx))
		if err != nil {
			cancel()
			o.t.Fatalf("%s %s on %s: %v", method, path, node, err)
		}
		raw, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if err != nil {
			o.t.Fatal(err)
		}
		if resp.StatusCode != http.StatusServiceUnavailable || want == http.StatusServiceUnavailable || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if resp.StatusCode != want {
		o.t.Fatalf("%s %s on %s: status %d, want %d: %s", method, path, node, resp.StatusCode, want, raw)
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	req := build()
	var ok bool
	var errs []*liberrors.ValidationError
	v := o.v
	if path == api.OpenAPIPath || path == api.WellKnownOpenAPIPath {
		v = o.loose
	}
	if validRequest {
		ok, errs = v.ValidateHttpRequestResponse(req, resp)
	} else {
		ok, errs = v.ValidateHttpResponse(req, resp)
	}
	if !ok {
		for _, e := range errs {
			o.t.Errorf("%s %s -> %d: %s: %s", method, path, resp.StatusCode, e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				o.t.Errorf("  %s at %s", se.Reason, se.FieldPath)
			}
		}
		o.t.Logf("answer: %s", raw)
	}
	o.seen[fmt.Sprintf("%s %d", method, resp.StatusCode)]++
	return reply{status: resp.StatusCode, header: resp.Header, body: raw}
}

func TestNode_AnswersMatchOpenAPI(t *testing.T) {
	c := startLifecycleCluster(t, 124)
	o := newOpenAPICheck(t, c)
	get := func(node, path, token string, want int, header ...string) reply {
		t.Helper()
		return o.call(node, "GET", path, token, nil, want, want < 400, header...)
	}

	// Health and the document itself, without a token.
	get("g1", "/livez", "", http.StatusOK)
	get("m1", "/readyz", "", http.StatusOK)
	for _, p := range []string{api.OpenAPIPath, api.WellKnownOpenAPIPath} {
		r := get("g2", p, "", http.StatusOK)
		if !bytes.Equal(r.body, api.OpenAPI()) || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %s, %d bytes: not the document", p, r.header.Get("Content-Type"), len(r.body))
		}
	}

	// A worker first, so that the job's workflows are leased to it.
	reg := o.call("g1", "POST", "/v1/workers", testWorkerToken, []byte(`{"worker_id":"w-bound","region":"use1","capacity":4}`), http.StatusCreated, true)
	var rw api.RegisterWorkerResponse
	reg.decode(t, &rw)
	if rw.DataPlane == nil {
		t.Errorf("registration without data_plane: %s", reg.body)
	}
	o.call("m2", "POST", "/v1/workers", testWorkerToken, []byte(`{"worker_id":"w-bound","region":"use1","capacity":4}`), http.StatusOK, true)

	// Jobs: a submit, its idempotent repeat and a conflicting one.
	sub := o.call("g1", "POST", "/v1/jobs", testAcmeToken, jobBody("acme", "oa-1", "10m"), http.StatusCreated, true)
	var job api.SubmitJobResponse
	sub.decode(t, &job)
	o.call("g2", "POST", "/v1/jobs", testAcmeToken, jobBody("acme", "oa-1", "10m"), http.StatusOK, true)
	o.call("g1", "POST", "/v1/jobs", testAcmeToken, jobBody("acme", "oa-1", "20m"), http.StatusConflict, true)
	o.call("g1", "POST", "/v1/jobs?durability=local", testAcmeToken, jobBody("acme", "", "10m"), http.StatusCreated, true)
	get("g3", "/v1/jobs/"+job.JobID, testAcmeToken, http.StatusOK)
	get("m1", "/v1/jobs/"+job.JobID+"?consistency=eventual", testAcmeToken, http.StatusOK)
	get("g1", "/v1/jobs/"+job.JobID+"?consistency=session", testAcmeToken, http.StatusOK, api.HeaderSession, sub.header.Get(api.HeaderSession))

	// Pages: a page of one, then the next by its cursor.
	var page api.JobList
	get("g1", "/v1/jobs?tenant=acme&limit=1", testAcmeToken, http.StatusOK).decode(t, &page)
	if page.NextCursor == "" {
		t.Fatalf("a page of 1 of 2 jobs has no next_cursor")
	}
	get("g2", "/v1/jobs?tenant=acme&limit=1&consistency=bounded&max_staleness=5s&cursor="+page.NextCursor, testAcmeToken, http.StatusOK)
	get("g1", "/v1/jobs/"+job.JobID+"/events?limit=2", testAcmeToken, http.StatusOK)

	// The worker's leases, heartbeat and reports.
	var leases api.LeaseList
	deadline := time.Now().Add(nodeTestWait)
	for len(leases.Leases) == 0 && time.Now().Before(deadline) {
		get("m3", fmt.Sprintf("/v1/workers/w-bound/leases?index=%d&wait=2s", leases.Index), testWorkerToken, http.StatusOK).decode(t, &leases)
	}
	if len(leases.Leases) == 0 {
		t.Fatalf("w-bound was leased nothing")
	}
	l := leases.Leases[0]
	running, _ := json.Marshal(api.HeartbeatRequest{Running: []api.RunningWorkflow{{Workflow: l.Workflow, LeaseFence: l.LeaseFence}, {Workflow: "x/use1/y/0", LeaseFence: 1}}})
	o.call("g2", "POST", "/v1/workers/w-bound/heartbeat", testWorkerToken, running, http.StatusOK, true)
	progress, _ := json.Marshal(api.ProgressRequest{Updates: []api.ProgressUpdate{{Workflow: l.Workflow, LeaseFence: l.LeaseFence, Completed: 10, Failed: 1}}})
	o.call("m1", "POST", "/v1/workers/w-bound/progress?durability=regional", testWorkerToken, progress, http.StatusOK, true)
	end, _ := json.Marshal(api.WorkflowEndRequest{Workflow: l.Workflow, LeaseFence: l.LeaseFence, Completed: 20, Failed: 1})
	o.call("m1", "POST", "/v1/workers/w-bound/complete", testWorkerToken, end, http.StatusOK, true)
	get("g1", "/v1/jobs/"+job.JobID+"/workflows", testAcmeToken, http.StatusOK)

	// Chain, cancel, cluster.
	get("g2", "/v1/chain/verify?tenant=acme", testAcmeToken, http.StatusOK)
	get("g2", "/v1/chain/checkpoints?tenant=acme", testAcmeToken, http.StatusOK)
	o.call("g1", "POST", "/v1/jobs/"+job.JobID+"/cancel", testAcmeToken, []byte(`{"reason":"done","requestor":"openapi test"}`), http.StatusOK, true)
	for _, n := range []string{"g1", "m2"} {
		get(n, "/v1/cluster/raft", testAdminToken, http.StatusOK)
		get(n, "/v1/cluster/members", testAdminToken, http.StatusOK)
	}
	get("g3", "/v1/cluster/antientropy", testAdminToken, http.StatusOK)
	get("g1", "/v1/debug/faults", testAdminToken, http.StatusOK)
	o.call("g1", "POST", "/v1/events:batch", testAcmeToken,
		[]byte(`{"events":[{"type":"JobCancellationRequested","job_id":"`+job.JobID+`","tenant":"acme","body":{"reason":"again","requestor":"t"}}]}`),
		http.StatusOK, true)
	o.call("m3", "DELETE", "/v1/workers/w-bound", testWorkerToken, nil, http.StatusOK, true)

	// Errors: every one the envelope, as the document says.
	get("g1", "/v1/jobs/use1-1000-g9-00001", testAcmeToken, http.StatusNotFound)
	get("g1", "/v1/jobs/"+job.JobID, testGlobexToken, http.StatusNotFound) // another tenant's
	get("g1", "/v1/jobs/not-a-job", testAcmeToken, http.StatusBadRequest)
	get("g2", "/v1/jobs?limit=0", testAcmeToken, http.StatusBadRequest)
	get("g2", "/v1/jobs/"+job.JobID+"?consistency=session", testAcmeToken, http.StatusBadRequest)
	get("g1", "/v1/jobs", "", http.StatusUnauthorized)
	get("g1", "/v1/cluster/raft", testAcmeToken, http.StatusForbidden)
	get("m1", "/v1/writes/g1/999999", testAcmeToken, http.StatusNotFound)
	o.call("g1", "POST", "/v1/jobs", testAcmeToken, []byte(`{"tenant":"acme","nope":1}`), http.StatusBadRequest, false)
	o.call("g1", "POST", "/v1/workers/w-bound/heartbeat", testWorkerToken, []byte(`{"running":[]}`), http.StatusNotFound, true)

	var ops []string
	for op, n := range o.seen {
		ops = append(ops, fmt.Sprintf("%s×%d", op, n))
	}
	t.Logf("answers checked: %s", strings.Join(ops, ", "))
}
