package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/httpapi"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/transport/api"
)

// Regression tests of issue 17's findings that the restructured API
// closes (each on its own subnet); each is named after its finding.

// Finding 4: a method string never becomes a metric label, and nothing
// of a request's method, path or headers stays behind it: 1,000 requests
// with huge methods, paths and headers (each different, as keys of a
// cache or labels would be) leave the heap within a few MB of where it
// started (subnet 219).
func TestFinding4_HugeMethodsDoNotGrowTheHeapOrTheMetrics(t *testing.T) {
	c := startTestCluster(t, 219)
	n := c.node("m1")
	base := "http://" + c.cfg("m1").HTTPAddr
	const requests = 1000
	sent, tooLarge := 0, 0
	send := func(count int) {
		for range count {
			sent++
			tag := strconv.Itoa(sent)
			method, path := "GET", "/v1/jobs?tenant=acme&consistency=eventual"
			header := http.Header{}
			switch sent % 5 {
			case 0: // a 32 KiB method
				method = strings.Repeat("M", 32<<10) + tag
			case 1: // a 48 KiB path: a job id, and a path no route has
				path = "/v1/jobs/" + strings.Repeat("j", 48<<10) + tag
				if sent%2 == 0 {
					path = "/" + strings.Repeat("p", 48<<10) + tag + "?" + strings.Repeat("q", 4<<10)
				}
			case 2: // 200 headers of 240 bytes, each name new
				for i := range 200 {
					header.Set(fmt.Sprintf("X-H%s-%d", tag, i), strings.Repeat("h", 240))
				}
			case 3: // one 60 KiB header
				header.Set("X-Big-"+tag, strings.Repeat("b", 60<<10))
			case 4: // a line and headers over the limit: 431
				method = strings.Repeat("M", 40<<10) + tag
				header.Set("X-Over-"+tag, strings.Repeat("o", 40<<10))
			}
			req, err := http.NewRequest(method, base+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header = header
			if sent%3 == 0 {
				req.Header.Set("Authorization", "Bearer "+testAcmeToken)
			}
			resp, err := c.http.Do(req)
			if err != nil {
				// The node may close a connection whose request is over
				// the limit while the client still sends it.
				if sent%5 == 4 && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
					tooLarge++
					continue
				}
				t.Fatal(err)
			}
			if resp.StatusCode == http.StatusRequestHeaderFieldsTooLarge {
				// Not read to its end: the node closes the connection
				// only after a delay (net/http's reset avoidance).
				resp.Body.Close()
				tooLarge++
				continue
			}
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
			resp.Body.Close()
			if resp.StatusCode == http.StatusInternalServerError {
				t.Fatalf("request %d: %d %s", sent, resp.StatusCode, b)
			}
		}
	}
	send(10) // warm up whatever the first requests allocate once
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	send(requests) // about 45 MB of methods, paths and headers
	after := heap()
	delta := int64(after) - int64(before)
	t.Logf("heap %d KiB before, %d KiB after %d requests with huge methods, paths and headers: %+d KiB (%d over the header limit)",
		before>>10, after>>10, requests, delta>>10, tooLarge)
	// The process holds six live nodes whose background work (replica
	// checks, reconcilers off) allocates too: "a few MB" of slack, against
	// the ~45 MB a request kept each would leave.
	if delta > 8<<20 {
		t.Fatalf("heap grew %d KiB after %d requests with huge methods, paths and headers", delta>>10, requests)
	}
	if tooLarge < requests/5 {
		t.Fatalf("%d of %d requests over the header limit were refused", tooLarge, requests/5)
	}
	families, err := n.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "strata_http_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "method" && len(l.GetValue()) > len("OPTIONS") || len(l.GetValue()) > 64 {
					t.Fatalf("label %s=%.40q…", l.GetName(), l.GetValue())
				}
			}
		}
	}
}

// Finding 7: cluster internals (members with their addresses, the Raft
// configuration) are for operators, not for every tenant token.
func TestFinding7_ClusterInternalsNeedTheOperatorScope(t *testing.T) {
	c := startTestCluster(t, 247)
	for _, path := range []string{"/v1/cluster/members", "/v1/cluster/raft"} {
		r := c.call("g1", "GET", path, testAcmeToken, nil)
		if r.status != http.StatusForbidden || r.apiError(t).Code != httpx.CodeForbidden {
			t.Errorf("%s with a tenant token: %d %s", path, r.status, r.body)
		}
		if r := c.call("g1", "GET", path, testAdminToken, nil); r.status != http.StatusOK {
			t.Errorf("%s with an operator token: %d %s", path, r.status, r.body)
		}
	}
}

// Finding 10: a client's own Strata-Forwarded-By headers are ignored, not
// obeyed: a job read on a manager, which forwards it to a gate, is served
// even when the client claims the manager forwarded it already (a 503
// "already forwarded" before). The hops nodes add are authenticated with
// the cluster token.
func TestFinding10_ClientForwardedByHeadersAreIgnored(t *testing.T) {
	c := startTestCluster(t, 248)
	r := c.submitJob("g1", "", "")
	if r.status != http.StatusCreated {
		t.Fatalf("submit: %d %s", r.status, r.body)
	}
	var sub struct {
		JobID string `json:"job_id"`
	}
	r.decode(t, &sub)
	got := c.call("m1", "GET", "/v1/jobs/"+sub.JobID, testAcmeToken, nil,
		"Strata-Forwarded-By", "m1")
	if got.status != http.StatusOK {
		t.Fatalf("read with forged hops: %d %s", got.status, got.body)
	}
}

// Finding 5: request headers are bounded (431 beyond MaxHeaderBytes), and
// 256 clients trickling headers a byte a second do not keep the node from
// serving others (subnet 220; their latency goes to the log).
func TestFinding5_HeaderLimitAndSlowClients(t *testing.T) {
	c := startTestCluster(t, 220)
	// The node answers 431 and closes the connection: the client sees the
	// answer, or a reset if it was still sending the header.
	big := httpapi.MaxHeaderBytes + 8<<10 // net/http allows 4 KiB over the limit
	req, _ := http.NewRequest("GET", "http://"+c.cfg("g1").HTTPAddr+"/v1/jobs", nil)
	req.Header.Set("Authorization", "Bearer "+testAcmeToken)
	req.Header.Set("X-Big", strings.Repeat("b", big))
	resp, err := c.http.Do(req)
	switch {
	case err == nil:
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("a %d-byte header: %d", big, resp.StatusCode)
		}
	case !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE):
		t.Fatalf("a %d-byte header: %v", big, err)
	}
	// Slow loris: many connections send their headers a byte a second
	// (within the 10 s header deadline, so the node keeps them all), and
	// other clients are served meanwhile.
	const slow, served = 256, 50
	goroutines := runtime.NumGoroutine()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var cut atomic.Int64 // slow connections the node dropped early
	line := []byte("GET /livez HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("s", 64) + "\r\n")
	for range slow {
		conn, err := net.Dial("tcp", c.cfg("g1").HTTPAddr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(line[:1]); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer conn.Close()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for _, b := range line[1:] {
				select {
				case <-tick.C:
				case <-stop:
					return
				}
				if _, err := conn.Write([]byte{b}); err != nil {
					cut.Add(1)
					return
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	var took []time.Duration
	began := time.Now()
	for range served {
		start := time.Now()
		if r := c.call("g1", "GET", "/v1/jobs?tenant=acme&consistency=eventual", testAcmeToken, nil); r.status != http.StatusOK {
			t.Fatalf("a client among %d slow ones: %d %s", slow, r.status, r.body)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	t.Logf("%d slow-loris connections open: %d of %d other requests served, latency p50 %s, p90 %s, max %s; %d more goroutines in the process",
		slow, len(took), served, took[len(took)/2], took[len(took)*9/10], took[len(took)-1], runtime.NumGoroutine()-goroutines)
	// The node keeps them all for its 10 s header deadline (a run slower
	// than that sees them go, as it should).
	if n := cut.Load(); n != 0 && time.Since(began) < 8*time.Second {
		t.Fatalf("the node dropped %d of the %d slow connections early", n, slow)
	}
}

// Finding 6: a submit cannot create unbounded work: workflows × count ×
// regions, duration, timeout and rate have named upper bounds, and a
// refusal names the limit.
func TestFinding6_SubmitWorkIsBounded(t *testing.T) {
	c := startTestCluster(t, 250)
	var wfs []string
	for i := range 200 {
		wfs = append(wfs, fmt.Sprintf(`{"name":"w%d","count":1000,"duration":"1m","rate":1}`, i))
	}
	tests := []struct {
		name   string
		body   string
		status int
		detail string
	}{
		{"200,000 instances", `{"tenant":"acme","regions":["use1"],"timeout":"10m","workflows":[` + strings.Join(wfs, ",") + `]}`,
			http.StatusRequestEntityTooLarge, "limit"},
		{"rate 1e308", `{"tenant":"acme","regions":["use1"],"timeout":"10m","workflows":[{"name":"w","count":1,"duration":"1m","rate":1e308}]}`,
			http.StatusBadRequest, "field"},
		{"timeout of a year", `{"tenant":"acme","regions":["use1"],"timeout":"8760h","workflows":[{"name":"w","count":1,"duration":"1m","rate":1}]}`,
			http.StatusBadRequest, "field"},
	}
	for _, tt := range tests {
		r := c.call("g1", "POST", "/v1/jobs", testAcmeToken, []byte(tt.body))
		if r.status != tt.status || r.apiError(t).Details[tt.detail] == nil {
			t.Errorf("%s: %d %.300s", tt.name, r.status, r.body)
		}
	}
	if r := c.call("g1", "GET", "/v1/jobs?tenant=acme&consistency=strong", testAcmeToken, nil); !strings.Contains(string(r.body), `"jobs":[]`) {
		t.Errorf("a refused submit created a job: %s", r.body)
	}
}

// Finding 2 (subnet 241): event ids and idempotency keys are scoped by
// tenant. Globex stores an event under the id acme's idempotency key
// derives (the hash is public), yet acme's submit with that key creates
// its job (a 409 before: the ledger found globex's event). A globex cancel
// naming acme's job is refused exactly as one naming a job nobody
// created: same status, code, message but the job id, and no "acme" in it.
func TestFinding2_TenantsCannotTakeOrProbeEachOthersIDs(t *testing.T) {
	c := startTestCluster(t, 241)
	sum := sha256.Sum256([]byte("strata idempotency v1\x00acme\x00k-f2"))
	keyID := hex.EncodeToString(sum[:16])
	// A client may choose the event id of a submit without a key (the
	// gate makes the rest).
	squat := fmt.Appendf(nil, `{"events":[{"id":%q,"type":"JobCreated","tenant":"globex","body":{"spec":%s}}]}`,
		keyID, jobBody("globex", "", "10m"))
	batch := func(body []byte) api.EventResult {
		t.Helper()
		r := c.call("g1", "POST", "/v1/events:batch", testGlobexToken, body)
		var br api.BatchResponse
		r.decode(t, &br)
		if r.status != http.StatusOK || len(br.Results) != 1 {
			t.Fatalf("batch: %d %s", r.status, r.body)
		}
		return br.Results[0]
	}
	if res := batch(squat); res.Outcome != "applied" {
		t.Fatalf("globex's event with acme's key id: %+v", res)
	}
	r := c.submitJob("g1", "", "k-f2")
	if r.status != http.StatusCreated {
		t.Fatalf("acme's submit with its key after globex took the id: %d %s", r.status, r.body)
	}
	var sub api.SubmitJobResponse
	r.decode(t, &sub)
	if again := c.submitJob("g2", "", "k-f2"); again.status != http.StatusOK {
		t.Fatalf("acme's repeat of its key: %d %s", again.status, again.body)
	}

	// A cancel by globex of acme's job is answered as one of a job nobody
	// created: same status, code and message but the job id.
	const nobodys = "use1-1700000000001-gate1-00043"
	cancel := func(jobID string) reply {
		return c.call("g1", "POST", "/v1/events:batch", testGlobexToken, fmt.Appendf(nil,
			`{"events":[{"type":"JobCancellationRequested","job_id":%q,"tenant":"globex","body":{"reason":"probe","requestor":"mallory"}}]}`, jobID))
	}
	theirs, unknown := cancel(sub.JobID), cancel(nobodys)
	te, ue := theirs.apiError(t), unknown.apiError(t)
	if theirs.status != http.StatusNotFound || unknown.status != theirs.status || te.Code != ue.Code ||
		strings.ReplaceAll(te.Message, sub.JobID, nobodys) != ue.Message || strings.Contains(string(theirs.body), "acme") {
		t.Fatalf("acme's job shows: %+v, nobody's job: %+v", te, ue)
	}
}
