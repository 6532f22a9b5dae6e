package cluster

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// FuzzAPI drives a real node's HTTP API (subnets 160-199) with random methods,
// paths, tokens, headers and bodies, as acme or as a stranger. Whatever it
// sends, the node never answers 500, never panics (a panic is a 500 from
// the route wrapper's recover), and never changes globex's job. Under
// `go test` it runs its seeds; `make fuzz` explores.
func FuzzAPI(f *testing.F) {
	// Each fuzz worker is a process of its own with a cluster of its own:
	// the subnet (160-199) comes from the process id so that two workers
	// do not bind the same addresses.
	c := startTestCluster(f, 160+os.Getpid()%40)
	r := c.call("g1", "POST", "/v1/jobs", testGlobexToken, jobBody("globex", "", "10m"))
	if r.status != http.StatusCreated {
		f.Fatalf("globex's job: %d %s", r.status, r.body)
	}
	var sub struct {
		JobID string `json:"job_id"`
	}
	r.decode(f, &sub)
	// get reads path as globex, failing t (c.call would fail the F).
	get := func(t testing.TB, path string) string {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+c.cfg("g1").HTTPAddr+path, nil)
		req.Header.Set("Authorization", "Bearer "+testGlobexToken)
		resp, err := c.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s as globex: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	// The job's state moves on its own (the lifecycle runs it), so its
	// events are compared, not its whole state: nothing acme does may
	// add one.
	events := func(t testing.TB) string { return get(t, "/v1/jobs/"+sub.JobID+"/events") }

	f.Add("GET", "/v1/jobs/"+sub.JobID, uint8(1), "", "", []byte(nil))
	f.Add("POST", "/v1/jobs/"+sub.JobID+"/cancel", uint8(1), "", "", []byte(`{"reason":"x"}`))
	f.Add("POST", "/v1/events:batch", uint8(1), "Content-Type", "application/json",
		[]byte(`{"events":[{"type":"JobCompleted","job_id":"`+sub.JobID+`","tenant":"globex","body":{"final_status":"COMPLETED"}}]}`))
	f.Add("POST", "/v1/jobs", uint8(0), "", "", jobBody("acme", "k", "10m"))
	f.Add("GET", "/v1/cluster/raft", uint8(1), "Strata-Forwarded-By", "m1", []byte(nil))
	f.Add("DELETE", "/v1/workers/w1", uint8(2), "", "", []byte(`{}`))
	f.Add("PATCH", "/v1/jobs?limit=-1", uint8(1), "Authorization", "bearer nope", []byte("{"))
	f.Add("GET", "/v1/chain/verify?tenant=globex", uint8(1), "", "", []byte(nil))
	f.Add("POST", "/v1/events:batch", uint8(1), "", "", []byte(`{"events":[{"type":"JobCreated","tenant":"acme","body":{"spec":`+string(jobBody("acme", "", "10m"))+`}}]}`))
	f.Add("POST", "/v1/workers/w-bound/progress", uint8(3), "", "", []byte(`{"updates":[{"workflow":"`+sub.JobID+`/use1/checkout/0","lease_fence":1,"completed":5}]}`))
	f.Add("GET", "/v1/export?tenant=globex&format=ndjson", uint8(1), "", "", []byte(nil))
	f.Add("POST", "/v1/import?force=true", uint8(1), "Content-Type", "application/octet-stream", []byte("STRATABUNDLE"))
	f.Add("POST", "/v1/cluster/antientropy/run", uint8(1), "", "", []byte(nil))
	f.Add("POST", "/internal/v1/replica/snapshot", uint8(0), "", "", []byte(nil))
	// A worker token holds no lease of globex's job: it may not change it
	// either.
	tokens := []string{"", testAcmeToken, "not-a-token-0123456789", testWorkerToken}
	f.Fuzz(func(t *testing.T, method, path string, who uint8, hname, hvalue string, body []byte) {
		if len(body) > 64<<10 || len(path) > 4096 || !strings.HasPrefix(path, "/") {
			return
		}
		before := events(t)
		node := []string{"g1", "m1"}[who/3%2]
		req, err := http.NewRequestWithContext(context.Background(), method, "http://"+c.cfg(node).HTTPAddr+path, bytes.NewReader(body))
		if err != nil {
			return // not a request a client could send
		}
		if tok := tokens[int(who)%len(tokens)]; tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		if hname != "" {
			req.Header.Set(hname, hvalue)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return // refused at the transport (a bad header, a closed connection)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if resp.StatusCode == http.StatusInternalServerError {
			t.Fatalf("%s %s on %s: 500 %s", method, path, node, b)
		}
		if after := events(t); after != before {
			t.Fatalf("%s %s on %s as a stranger changed globex's job:\n%s\n%s", method, path, node, before, after)
		}
	})
}
