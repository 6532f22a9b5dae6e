package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// loopbackServer serves h on 127.0.0.1 and returns its address.
func loopbackServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return ln.Addr().String()
}

// fakeStrata answers like a node: it checks the token, decodes bodies as
// the API does, validates every event, and rejects every event whose id
// it has already seen (a repeated id would mean the workload collides),
// or every event when rejectAll is set.
type fakeStrata struct {
	t         *testing.T
	token     string
	mu        sync.Mutex
	seen      map[fsm.EventID]bool
	keys      map[string]bool
	requests  atomic.Int64
	failWith  int  // if not 0, answer every request with this status
	rejectAll bool // reject every event as a duplicate
}

func (f *fakeStrata) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		writeEnvelope(w, http.StatusUnauthorized, api.CodeUnauthenticated)
		return
	}
	if f.failWith != 0 {
		writeEnvelope(w, f.failWith, api.CodeUnavailable)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/v1/jobs":
		var spec fsm.JobSpec
		if err := json.NewDecoder(r.Body).Decode(&spec); err != nil || f.keys[spec.IdempotencyKey] {
			f.t.Errorf("job submit: %v, key repeated: %v", err, f.keys[spec.IdempotencyKey])
			writeEnvelope(w, http.StatusBadRequest, api.CodeBadRequest)
			return
		}
		f.keys[spec.IdempotencyKey] = true
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(api.SubmitJobResponse{JobID: "use1-1-g-00001"})
	case "/v1/events:batch":
		var req api.BatchRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			f.t.Errorf("batch: %v", err)
			writeEnvelope(w, http.StatusBadRequest, api.CodeBadRequest)
			return
		}
		var resp api.BatchResponse
		for _, e := range req.Events {
			res := api.EventResult{ID: e.ID, Outcome: "applied"}
			if err := e.Validate(); err != nil {
				f.t.Errorf("invalid event: %v", err)
				res.Outcome, res.Error = "rejected", &api.Error{Code: api.CodeBadRequest}
			}
			if f.seen[e.ID] || f.rejectAll {
				res.Outcome, res.Error = "rejected", &api.Error{Code: "duplicate_id"}
			}
			f.seen[e.ID] = true
			resp.Results = append(resp.Results, res)
		}
		_ = json.NewEncoder(w).Encode(resp)
	default:
		writeEnvelope(w, http.StatusNotFound, api.CodeNotFound)
	}
}

func writeEnvelope(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(api.ErrorEnvelope{Error: &api.Error{Code: code, Message: "fake"}})
}

func newFakeStrata(t *testing.T) *fakeStrata {
	return &fakeStrata{t: t, token: "secret-token-0123456789", seen: map[fsm.EventID]bool{}, keys: map[string]bool{}}
}

func TestRun_RequestCountIsExactAcrossClients(t *testing.T) {
	tests := []struct {
		name       string
		tier       string
		batch      int
		wantEvents int64
	}{
		{"job submits", TierGlobal, 1, 25},
		{"job created batches", TierGlobal, 4, 100},
		{"workflow batches", TierRegional, 10, 250},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeStrata(t)
			a, b := loopbackServer(t, f), loopbackServer(t, f)
			res, err := Run(context.Background(), Config{
				Addrs: []string{a, "http://" + b}, Token: f.token, Tier: tt.tier, Batch: tt.batch,
				Clients: 4, Requests: 25, Duration: 30 * time.Second,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests != 25 || res.Failed != 0 || f.requests.Load() != 25 {
				t.Fatalf("requests ok %d failed %d served %d, want 25 0 25; errors %v", res.Requests, res.Failed, f.requests.Load(), res.Errors)
			}
			if res.Events != tt.wantEvents || len(res.RejectedEvents) != 0 {
				t.Fatalf("events %d rejected %v, want %d and none", res.Events, res.RejectedEvents, tt.wantEvents)
			}
			if res.Latency.P50 <= 0 || res.Latency.Max < res.Latency.P99 || res.RequestsPerSec <= 0 {
				t.Fatalf("latency %+v, %v req/s", res.Latency, res.RequestsPerSec)
			}
		})
	}
}

func TestRun_StopsAtTheDuration(t *testing.T) {
	f := newFakeStrata(t)
	addr := loopbackServer(t, f)
	var progress bytes.Buffer
	start := time.Now()
	res, err := Run(context.Background(), Config{Addrs: []string{addr}, Token: f.token, Clients: 2,
		Duration: 300 * time.Millisecond, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("a 300 ms run took %v", took)
	}
	if res.Requests == 0 || res.Failed != 0 {
		t.Fatalf("ok %d failed %d errors %v", res.Requests, res.Failed, res.Errors)
	}
	if progress.Len() == 0 {
		t.Fatal("no progress bar drawn")
	}
}

func TestRun_CountsFailuresByCause(t *testing.T) {
	f := newFakeStrata(t)
	f.failWith = http.StatusServiceUnavailable
	addr := loopbackServer(t, f)

	// A port nobody listens on: bind one, note it, close it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()

	res, err := Run(context.Background(), Config{Addrs: []string{addr, dead}, Token: f.token,
		Clients: 2, Requests: 10, Duration: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 0 || res.Failed != 10 {
		t.Fatalf("ok %d failed %d, want 0 and 10", res.Requests, res.Failed)
	}
	if res.Errors["503 unavailable"] == 0 || res.Errors["connection refused"] == 0 ||
		res.Errors["503 unavailable"]+res.Errors["connection refused"] != 10 {
		t.Fatalf("errors %v, want 503 unavailable and connection refused adding up to 10", res.Errors)
	}

	res, err = Run(context.Background(), Config{Addrs: []string{addr}, Token: "wrong", Requests: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors["401 unauthenticated"] != 2 {
		t.Fatalf("errors %v, want 2 × 401 unauthenticated", res.Errors)
	}
}

func TestRun_CountsRejectedEvents(t *testing.T) {
	f := newFakeStrata(t)
	f.rejectAll = true
	addr := loopbackServer(t, f)
	res, err := Run(context.Background(), Config{Addrs: []string{addr}, Token: f.token, Tier: TierRegional, Batch: 5, Requests: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 2 || res.Events != 0 || res.RejectedEvents["duplicate_id"] != 10 {
		t.Fatalf("ok %d events %d rejected %v, want 2, 0 and 10 duplicate_id", res.Requests, res.Events, res.RejectedEvents)
	}
}

func TestRun_EtcdPuts(t *testing.T) {
	var puts atomic.Int64
	var mu sync.Mutex
	keys := map[string]bool{}
	etcd := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var put struct{ Key, Value []byte }
		if r.URL.Path != "/v3/kv/put" || r.Header.Get("Authorization") != "" || json.NewDecoder(r.Body).Decode(&put) != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"bad","code":3,"message":"bad"}`)
			return
		}
		mu.Lock()
		dup := keys[string(put.Key)]
		keys[string(put.Key)] = true
		mu.Unlock()
		if dup || len(put.Value) != 64 {
			t.Errorf("key %q repeated %v, value %d bytes", put.Key, dup, len(put.Value))
		}
		puts.Add(1)
		fmt.Fprint(w, `{"header":{"revision":"2"}}`)
	})
	addr := loopbackServer(t, etcd)
	res, err := Run(context.Background(), Config{Addrs: []string{addr}, Target: TargetEtcd, PayloadBytes: 64,
		Clients: 3, Requests: 12})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 12 || res.Events != 12 || puts.Load() != 12 || res.Tier != "" || res.Workload != WorkloadEtcdPut {
		t.Fatalf("result %+v, puts %d", res, puts.Load())
	}

	bad := loopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":"etcdserver: leader changed","code":14,"message":"etcdserver: leader changed"}`)
	}))
	res, err = Run(context.Background(), Config{Addrs: []string{bad}, Target: TargetEtcd, Requests: 1})
	if err != nil || res.Errors["503 grpc-14"] != 1 {
		t.Fatalf("errors %v (%v), want one 503 grpc-14", res.Errors, err)
	}
}

func TestRun_RefusesBadConfig(t *testing.T) {
	_, err := Run(context.Background(), Config{})
	if err == nil || !strings.Contains(err.Error(), "no address") {
		t.Fatalf("error %v, want one naming the missing address", err)
	}
}

func TestRun_WaitsForReadiness(t *testing.T) {
	var ready atomic.Bool
	var checks atomic.Int64
	f := newFakeStrata(t)
	addr := loopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			if checks.Add(1) >= 3 {
				ready.Store(true)
			}
			if !ready.Load() {
				writeEnvelope(w, http.StatusServiceUnavailable, api.CodeUnavailable)
				return
			}
			fmt.Fprint(w, `{"status":"ok"}`)
			return
		}
		if !ready.Load() {
			t.Errorf("%s before the node was ready", r.URL.Path)
		}
		f.ServeHTTP(w, r)
	}))
	res, err := Run(context.Background(), Config{Addrs: []string{addr}, Token: f.token, Requests: 3, WaitReady: 20 * time.Second})
	if err != nil || res.Requests != 3 {
		t.Fatalf("run: %v, %+v", err, res)
	}

	never := loopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"health":"false"}`)
	}))
	_, err = Run(context.Background(), Config{Addrs: []string{never}, Target: TargetEtcd, Requests: 1, WaitReady: 500 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "not ready after 500ms") || !strings.Contains(err.Error(), "503") {
		t.Fatalf("error %v, want not ready naming the 503", err)
	}
}
