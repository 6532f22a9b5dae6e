package api

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"
)

// fixedAnswer is a RoundTripper that answers every request with one
// status, header and body: the client's decoders see a server's answer
// without a network.
type fixedAnswer struct {
	status int
	header http.Header
	body   []byte
}

func (f *fixedAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: f.status, Header: f.header.Clone(), Body: io.NopCloser(bytes.NewReader(f.body)),
		ContentLength: int64(len(f.body)), Request: r, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
}

// FuzzClientAnswers: whatever a server answers (status, session and meta
// headers, body), every typed call of the client returns a decoded value
// or an error, never a panic; a call that succeeds returns its value; the
// paging of VerifyChain ends; and decoding allocates at most a fixed
// multiple of the body.
func FuzzClientAnswers(f *testing.F) {
	f.Add(200, "", "", []byte(`{}`))
	f.Add(200, "global:7", "12", []byte(`{"tenant":"acme","seq":10,"link":"l10","verified":true,"complete":false,"next":10}`))
	f.Add(201, "x", "-1", []byte(`{"job_id":"use1-1-g-00001","durability":"GLOBAL","hlc":"0000000000000001-0000"}`))
	f.Add(409, "", "", []byte(`{"error":{"code":"conflict","message":"broken","details":{"seq":3}}}`))
	f.Add(200, "", "", []byte(`{"jobs":[{"job_id":1}],"next_cursor":""}`))
	f.Add(200, "", "", []byte(`{"index":4,"leases":[{"workflow":"w","lease_fence":"x"}]}`))
	f.Add(204, "", "", []byte(nil))
	f.Add(500, "", "", []byte(`<html>`))
	f.Fuzz(func(t *testing.T, status int, session, index string, body []byte) {
		if status < 100 || status > 599 || len(body) > 1<<20 {
			return
		}
		h := http.Header{"Content-Type": {"application/json"}}
		if session != "" {
			h.Set(HeaderSession, session)
		}
		if index != "" {
			h.Set(HeaderIndex, index)
		}
		c, err := New(ClientConfig{Addrs: []string{"127.0.0.1:1"}, Token: "t",
			HTTPClient: &http.Client{Transport: &fixedAnswer{status: status, header: h, body: body}}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ro := ReadOptions{Consistency: ConsistencyEventual}
		check := func(what string, ok bool, err error) {
			t.Helper()
			if err == nil && !ok {
				t.Fatalf("%s: no value and no error for %d %q", what, status, body)
			}
			var ae *Error
			if status >= 300 && err == nil {
				t.Fatalf("%s: status %d is not an error", what, status)
			}
			if status >= 300 && !errors.As(err, &ae) && !errors.Is(err, ErrUnreachable) && !errors.Is(err, ErrOutcomeUnknown) {
				t.Fatalf("%s: status %d gave %T %v, want an *Error", what, status, err, err)
			}
		}
		calls := func() {
			st, _, err := c.Job(ctx, "use1-1-g-00001", ro)
			check("job", st != nil, err)
			jl, _, err := c.ListJobs(ctx, JobQuery{Tenant: "acme"}, ro)
			check("list", jl != nil, err)
			el, _, err := c.JobEvents(ctx, "use1-1-g-00001", Page{}, ro)
			check("events", el != nil, err)
			sj, _, err := c.SubmitJob(ctx, &SubmitJobRequest{Tenant: "acme", IdempotencyKey: "k"}, WriteOptions{})
			check("submit", sj != nil, err)
			cv, _, err := c.VerifyChain(ctx, "acme", ro)
			check("chain", cv != nil, err)
			if err == nil && !cv.Complete {
				t.Fatalf("VerifyChain returned an incomplete page: %+v", cv)
			}
			ll, _, err := c.Leases(ctx, "w1", 0, time.Second)
			check("leases", ll != nil, err)
			hb, _, err := c.Heartbeat(ctx, "w1", &HeartbeatRequest{})
			check("heartbeat", hb != nil, err)
			rw, _, err := c.RegisterWorker(ctx, &RegisterWorkerRequest{Region: "use1", Capacity: 1})
			check("register", rw != nil, err)
			pr, _, err := c.ReportProgress(ctx, "w1", &ProgressRequest{Updates: []ProgressUpdate{{Workflow: "w", LeaseFence: 1}}}, WriteOptions{})
			check("progress", pr != nil, err)
			rs, _, err := c.RaftStatus(ctx)
			check("raft", rs != nil, err)
			ml, _, err := c.Members(ctx)
			check("members", ml != nil, err)
			wl, _, err := c.JobWorkflows(ctx, "use1-1-g-00001", ro)
			check("workflows", wl != nil, err)
		}
		calls()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		calls()
		runtime.ReadMemStats(&after)
		// 13 calls (VerifyChain up to two pages), each with its HTTP
		// request and a copy of the body.
		if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(14*(512*len(body)+64<<10)); got > limit {
			t.Fatalf("13 calls answered with %d bytes allocated %d (limit %d)", len(body), got, limit)
		}
	})
}
