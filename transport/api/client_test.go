package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

// seen is one request as a test server received it.
type seen struct {
	Method, Path, Query, Body string
	Header                    http.Header
}

// recorder is a loopback API server that records requests and answers each
// with the handler the test set (200 {} by default).
type recorder struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []seen
	// answer writes the response; nil answers 200 {}.
	answer func(w http.ResponseWriter, r *http.Request)
}

func newRecorder(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *recorder {
	t.Helper()
	rec := &recorder{answer: answer}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.got = append(rec.got, seen{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, string(body), r.Header.Clone()})
		rec.mu.Unlock()
		if rec.answer == nil {
			_, _ = io.WriteString(w, "{}")
			return
		}
		rec.answer(w, r)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (rec *recorder) requests() []seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]seen(nil), rec.got...)
}

func (rec *recorder) last(t *testing.T) seen {
	t.Helper()
	got := rec.requests()
	if len(got) == 0 {
		t.Fatal("server received no request")
	}
	return got[len(got)-1]
}

func newTestClient(t *testing.T, cfg ClientConfig) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func sameJSON(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("body %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %q: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("body = %s\nwant   %s", gb, wb)
	}
}

func TestNew_RejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  ClientConfig
		want string
	}{
		{"no address", ClientConfig{}, "no address"},
		{"bad scheme", ClientConfig{Addrs: []string{"ftp://h:1"}}, "scheme"},
		{"no port", ClientConfig{Addrs: []string{"localhost"}}, "host:port"},
		{"path", ClientConfig{Addrs: []string{"http://h:1/v1"}}, "only scheme"},
		{"negative timeout", ClientConfig{Addrs: []string{"h:1"}, Timeout: -1}, "negative timeout"},
		{"token with space", ClientConfig{Addrs: []string{"h:1"}, Token: "a b"}, "white space"},
		{"too many", ClientConfig{Addrs: make([]string, MaxAddrs+1)}, "over the limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestNew_NormalizesAddrs(t *testing.T) {
	c := newTestClient(t, ClientConfig{Addrs: []string{"127.0.0.1:8080", " https://h:443/ ", "http://h"}})
	want := []string{"http://127.0.0.1:8080", "https://h:443", "http://h"}
	if got := c.Addrs(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("Addrs = %q, want %q", got, want)
	}
}

func TestNew_PoolsConnectionsForManyCallers(t *testing.T) {
	c := newTestClient(t, ClientConfig{Addrs: []string{"h:1"}})
	tr := c.hc.Transport.(*http.Transport)
	if tr.MaxIdleConnsPerHost < 256 || tr.MaxIdleConns < tr.MaxIdleConnsPerHost {
		t.Fatalf("pool: %d per host, %d in all; want >= 256 per host", tr.MaxIdleConnsPerHost, tr.MaxIdleConns)
	}
}

func TestClient_RequestsMatchTheAPI(t *testing.T) {
	rec := newRecorder(t, nil)
	c := newTestClient(t, ClientConfig{Addrs: []string{rec.srv.URL}, Token: "tok-123"})
	ctx := context.Background()
	spec := &SubmitJobRequest{Tenant: "acme", IdempotencyKey: "k1", Regions: []string{"use1"},
		Timeout:   fsm.Duration(time.Minute),
		Workflows: []fsm.WorkflowSpec{{Name: "checkout", Count: 2, Duration: fsm.Duration(30 * time.Second), Rate: 5}}}
	tests := []struct {
		name        string
		call        func() error
		method      string
		path, query string
		body        string // JSON, "" for none
		session     string
	}{
		{"submit", func() error { _, _, err := c.SubmitJob(ctx, spec, WriteOptions{Durability: "LOCAL"}); return err },
			"POST", "/v1/jobs", "durability=local",
			`{"tenant":"acme","idempotency_key":"k1","regions":["use1"],"timeout":"1m0s","workflows":[{"name":"checkout","count":2,"duration":"30s","rate":5,"failure_ratio":0}]}`, ""},
		{"job strong", func() error {
			_, _, err := c.Job(ctx, "use1-1-g-00001", ReadOptions{Consistency: ConsistencyStrong})
			return err
		}, "GET", "/v1/jobs/use1-1-g-00001", "consistency=strong", "", ""},
		{"job bounded", func() error {
			_, _, err := c.Job(ctx, "a/b c", ReadOptions{MaxStaleness: 1500 * time.Millisecond})
			return err
		}, "GET", "/v1/jobs/a%2Fb%20c", "consistency=bounded&max_staleness=1.5s", "", ""},
		{"job session", func() error { _, _, err := c.Job(ctx, "j", ReadOptions{Session: "global:42"}); return err },
			"GET", "/v1/jobs/j", "consistency=session", "", "global:42"},
		{"list", func() error {
			_, _, err := c.ListJobs(ctx, JobQuery{Tenant: "acme", Status: "RUNNING", Region: "use1", Page: Page{Limit: 10, Cursor: "c&1"}},
				ReadOptions{Consistency: "eventual"})
			return err
		}, "GET", "/v1/jobs", "consistency=eventual&cursor=c%261&limit=10&region=use1&status=RUNNING&tenant=acme", "", ""},
		{"list default", func() error { _, _, err := c.ListJobs(ctx, JobQuery{}, ReadOptions{}); return err },
			"GET", "/v1/jobs", "", "", ""},
		{"cancel", func() error {
			_, _, err := c.CancelJob(ctx, "j1", CancelJobRequest{Reason: "r", Requestor: "me"}, WriteOptions{})
			return err
		}, "POST", "/v1/jobs/j1/cancel", "", `{"reason":"r","requestor":"me"}`, ""},
		{"events", func() error {
			_, _, err := c.JobEvents(ctx, "j1", Page{Limit: 5, Cursor: "x"}, ReadOptions{})
			return err
		}, "GET", "/v1/jobs/j1/events", "cursor=x&limit=5", "", ""},
		{"batch", func() error {
			_, _, err := c.SubmitEvents(ctx, &BatchRequest{Events: []fsm.Event{}}, WriteOptions{Durability: DurabilityNone})
			return err
		}, "POST", "/v1/events:batch", "durability=none", `{"events":[]}`, ""},
		{"write status", func() error { _, _, err := c.WriteStatus(ctx, WriteRef("m1", 42)); return err },
			"GET", "/v1/writes/m1/42", "", "", ""},
		{"members", func() error { _, _, err := c.Members(ctx); return err }, "GET", "/v1/cluster/members", "", "", ""},
		{"raft", func() error { _, _, err := c.RaftStatus(ctx); return err }, "GET", "/v1/cluster/raft", "", "", ""},
		{"join", func() error {
			_, _, err := c.JoinRaft(ctx, JoinRequest{NodeID: "n4", RaftAddr: "127.0.0.4:7000", NonVoter: true})
			return err
		}, "POST", "/v1/cluster/raft/join", "", `{"node_id":"n4","raft_addr":"127.0.0.4:7000","non_voter":true}`, ""},
		{"remove", func() error { _, _, err := c.RemoveRaftPeer(ctx, "n4"); return err },
			"DELETE", "/v1/cluster/raft/peers/n4", "", "", ""},
		{"transfer", func() error { _, _, err := c.TransferLeadership(ctx, TransferRequest{To: "n2"}); return err },
			"POST", "/v1/cluster/raft/transfer-leadership", "", `{"to":"n2"}`, ""},
		{"faults", func() error { var out map[string]any; _, err := c.Faults(ctx, &out); return err },
			"GET", "/v1/debug/faults", "", "", ""},
		{"set faults", func() error {
			_, err := c.SetFaults(ctx, map[string]any{"wan_latency": "30ms", "peers": []any{}}, nil)
			return err
		}, "PUT", "/v1/debug/faults", "", `{"wan_latency":"30ms","peers":[]}`, ""},
		{"livez", func() error { _, _, err := c.Livez(ctx); return err }, "GET", "/livez", "", "", ""},
		{"readyz", func() error { _, _, err := c.Readyz(ctx); return err }, "GET", "/readyz", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); err != nil {
				t.Fatalf("call: %v", err)
			}
			got := rec.last(t)
			if got.Method != tt.method || got.Path != tt.path || got.Query != tt.query {
				t.Errorf("request = %s %s?%s, want %s %s?%s", got.Method, got.Path, got.Query, tt.method, tt.path, tt.query)
			}
			if tt.body == "" {
				if got.Body != "" {
					t.Errorf("body = %q, want none", got.Body)
				}
			} else {
				sameJSON(t, got.Body, tt.body)
				if ct := got.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q", ct)
				}
			}
			if a := got.Header.Get("Authorization"); a != "Bearer tok-123" {
				t.Errorf("Authorization = %q, want Bearer tok-123", a)
			}
			if s := got.Header.Get(HeaderSession); s != tt.session {
				t.Errorf("%s = %q, want %q", HeaderSession, s, tt.session)
			}
		})
	}
}

func TestClient_NoTokenSendsNoAuthorization(t *testing.T) {
	rec := newRecorder(t, nil)
	c := newTestClient(t, ClientConfig{Addrs: []string{rec.srv.URL}})
	if _, _, err := c.Members(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a, ok := rec.last(t).Header["Authorization"]; ok {
		t.Fatalf("Authorization = %q, want none", a)
	}
}

func TestClient_RejectsBadOptionsBeforeSending(t *testing.T) {
	rec := newRecorder(t, nil)
	c := newTestClient(t, ClientConfig{Addrs: []string{rec.srv.URL}})
	ctx := context.Background()
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"consistency", func() error { _, _, err := c.Job(ctx, "j", ReadOptions{Consistency: "linear"}); return err }, `consistency "linear"`},
		{"staleness not bounded", func() error {
			_, _, err := c.Job(ctx, "j", ReadOptions{Consistency: "strong", MaxStaleness: time.Second})
			return err
		}, "bounded reads only"},
		{"session bytes", func() error { _, _, err := c.Job(ctx, "j", ReadOptions{Session: "a b"}); return err }, "not printable"},
		{"durability", func() error {
			_, _, err := c.CancelJob(ctx, "j", CancelJobRequest{}, WriteOptions{Durability: "forever"})
			return err
		}, `durability "forever"`},
		{"empty job id", func() error { _, _, err := c.Job(ctx, "", ReadOptions{}); return err }, "job id is empty"},
		{"negative limit", func() error { _, _, err := c.ListJobs(ctx, JobQuery{Page: Page{Limit: -1}}, ReadOptions{}); return err }, "limit -1"},
		{"empty node id", func() error { _, _, err := c.RemoveRaftPeer(ctx, ""); return err }, "node id is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	if n := len(rec.requests()); n != 0 {
		t.Fatalf("server received %d requests, want 0", n)
	}
}

func TestClient_ParsesResponseMeta(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		ResponseMeta{Index: 77, LastContact: 1500 * time.Millisecond, Leader: "use1-gate1", Session: "global:77"}.SetHeaders(w.Header())
		writeJSON(w, http.StatusCreated, SubmitJobResponse{JobID: "use1-1-g-00001", WriteResponse: WriteResponse{Durability: "GLOBAL", Session: "global:77"}})
	})
	c := newTestClient(t, ClientConfig{Addrs: []string{rec.srv.URL}})
	out, meta, err := c.SubmitJob(context.Background(), &SubmitJobRequest{Tenant: "acme"}, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := ResponseMeta{Index: 77, LastContact: 1500 * time.Millisecond, Leader: "use1-gate1", Session: "global:77",
		Status: http.StatusCreated, Addr: rec.srv.URL}
	meta.Body = nil
	if !reflect.DeepEqual(meta, want) {
		t.Fatalf("meta = %+v\nwant   %+v", meta, want)
	}
	if out.JobID != "use1-1-g-00001" || out.Durability != "GLOBAL" {
		t.Fatalf("response = %+v", out)
	}
}

func TestClient_MalformedMetaHeaderIsAnError(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(HeaderIndex, "seven")
		writeJSON(w, http.StatusOK, MemberList{})
	})
	c := newTestClient(t, ClientConfig{Addrs: []string{rec.srv.URL}})
	_, _, err := c.Members(context.Background())
	if err == nil || !strings.Contains(err.Error(), `header Strata-Index "seven"`) {
		t.Fatalf("err = %v, want it to name the header and value", err)
	}
}

func TestClient_DecodesErrorEnvelope(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		ResponseMeta{Leader: "n1"}.SetHeaders(w.Header())
		writeJSON(w, http.StatusNotFound, ErrorEnvelope{Error: &Error{Code: CodeNotFound,
			Message: "job use1-1-g-00009 not found", Details: map[string]any{"job_id": "use1-1-g-00009"}}})
	})
	c := newTestClient(t, ClientConfig{Addrs: []string{rec.srv.URL}})
	st, meta, err := c.Job(context.Background(), "use1-1-g-00009", ReadOptions{})
	var ae *Error
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v (%T), want *Error", err, err)
	}
	if st != nil {
		t.Errorf("state = %+v, want nil on error", st)
	}
	if ae.Status != 404 || ae.Code != CodeNotFound || ae.Details["job_id"] != "use1-1-g-00009" {
		t.Errorf("error = %+v", ae)
	}
	if got, want := err.Error(), "404 not_found: job use1-1-g-00009 not found"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if meta.Status != 404 || meta.Leader != "n1" {
		t.Errorf("meta = %+v, want status and headers of the error response", meta)
	}
}

func TestClient_NonEnvelopeErrorKeepsStatusAndSnippet(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "<html>\n  upstream\tdown\x00</html>")
	})
	c := newTestClient(t, ClientConfig{Addrs: []string{rec.srv.URL}})
	_, _, err := c.Members(context.Background())
	var ae *Error
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v (%T), want *Error", err, err)
	}
	want := &Error{Status: 502, Code: CodeUnavailable, Message: "Bad Gateway: <html> upstream down </html>"}
	if ae.Status != want.Status || ae.Code != want.Code || ae.Message != want.Message {
		t.Fatalf("error = %+v, want %+v", ae, want)
	}
}

func TestClient_ReadyzNotReadyReturnsHealthAndError(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusServiceUnavailable, Health{Status: "unavailable", Reason: "no leader"})
	})
	c := newTestClient(t, ClientConfig{Addrs: []string{rec.srv.URL}})
	h, _, err := c.Readyz(context.Background())
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != 503 || ae.Code != CodeUnavailable || !strings.Contains(ae.Message, "no leader") {
		t.Fatalf("err = %v, want a 503 unavailable naming the reason", err)
	}
	if h == nil || h.Reason != "no leader" {
		t.Fatalf("health = %+v, want the reason", h)
	}
}

func TestClient_FailsOverToNextAddress(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, MemberList{Node: "n2"})
	})
	c := newTestClient(t, ClientConfig{Addrs: []string{closedAddr(t), rec.srv.URL}})
	for i := range 2 {
		ml, meta, err := c.Members(context.Background())
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if ml.Node != "n2" || meta.Addr != rec.srv.URL {
			t.Fatalf("call %d: answered by %s (%s), want n2 at %s", i, ml.Node, meta.Addr, rec.srv.URL)
		}
	}
	if p := c.preferred.Load(); p != 1 {
		t.Fatalf("preferred address = %d, want 1: later calls should start at the node that answered", p)
	}
}

func TestClient_AllAddressesDownIsUnreachable(t *testing.T) {
	a, b := closedAddr(t), closedAddr(t)
	c := newTestClient(t, ClientConfig{Addrs: []string{a, b}})
	_, _, err := c.RaftStatus(context.Background())
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
	for _, addr := range []string{a, b} {
		if !strings.Contains(err.Error(), addr) {
			t.Errorf("err = %v, want it to name %s", err, addr)
		}
	}
}

// dropAfterRead is a handler that reads the request and closes the
// connection without answering, like a node killed mid-request.
func dropAfterRead(w http.ResponseWriter, r *http.Request) {
	_, _ = io.ReadAll(r.Body)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

func TestClient_ConnectionLostAfterSend(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name         string
		call         func(c *Client) error
		wantFailover bool
	}{
		{"read fails over", func(c *Client) error { _, _, err := c.Job(ctx, "j", ReadOptions{}); return err }, true},
		{"submit with key fails over", func(c *Client) error {
			_, _, err := c.SubmitJob(ctx, &SubmitJobRequest{Tenant: "t", IdempotencyKey: "k"}, WriteOptions{})
			return err
		}, true},
		{"submit without key does not", func(c *Client) error {
			_, _, err := c.SubmitJob(ctx, &SubmitJobRequest{Tenant: "t"}, WriteOptions{})
			return err
		}, false},
		{"transfer does not", func(c *Client) error { _, _, err := c.TransferLeadership(ctx, TransferRequest{}); return err }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dead := newRecorder(t, dropAfterRead)
			good := newRecorder(t, nil)
			c := newTestClient(t, ClientConfig{Addrs: []string{dead.srv.URL, good.srv.URL}})
			err := tt.call(c)
			if len(dead.requests()) == 0 {
				t.Fatal("the first node received nothing")
			}
			gotFailover := len(good.requests()) > 0
			if gotFailover != tt.wantFailover {
				t.Fatalf("second node called = %v, want %v (err %v)", gotFailover, tt.wantFailover, err)
			}
			if tt.wantFailover && err != nil {
				t.Fatalf("err = %v, want success on the second node", err)
			}
			if !tt.wantFailover && !errors.Is(err, ErrOutcomeUnknown) {
				t.Fatalf("err = %v, want ErrOutcomeUnknown", err)
			}
		})
	}
}

func TestClient_AttemptTimeoutFailsOver(t *testing.T) {
	stuck := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	good := newRecorder(t, nil)
	c := newTestClient(t, ClientConfig{Addrs: []string{stuck.srv.URL, good.srv.URL}, Timeout: 100 * time.Millisecond})
	if _, _, err := c.Members(context.Background()); err != nil {
		t.Fatalf("Members: %v", err)
	}
	if len(good.requests()) != 1 {
		t.Fatal("the second node was not called after the first timed out")
	}
}

func TestClient_PinnedCallsDoNotFailOver(t *testing.T) {
	good := newRecorder(t, nil)
	c := newTestClient(t, ClientConfig{Addrs: []string{closedAddr(t), good.srv.URL}})
	ctx := context.Background()
	if _, err := c.SetFaults(ctx, map[string]any{}, nil); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("SetFaults err = %v, want ErrUnreachable", err)
	}
	if _, _, err := c.Livez(ctx); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Livez err = %v, want ErrUnreachable", err)
	}
	if n := len(good.requests()); n != 0 {
		t.Fatalf("the second node received %d requests, want 0", n)
	}
}

func TestClient_CanceledContextStopsFailover(t *testing.T) {
	good := newRecorder(t, nil)
	c := newTestClient(t, ClientConfig{Addrs: []string{closedAddr(t), good.srv.URL}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := c.Members(ctx)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnreachable) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(good.requests()) != 0 {
		t.Fatal("a canceled call reached the second node")
	}
}

func TestClient_BoundsResponseBody(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `"`)
		chunk := strings.Repeat("x", 64<<10)
		for n := 0; n <= MaxResponseBytes; n += len(chunk) {
			_, _ = io.WriteString(w, chunk)
		}
	})
	c := newTestClient(t, ClientConfig{Addrs: []string{rec.srv.URL}})
	_, _, err := c.Members(context.Background())
	if err == nil || !strings.Contains(err.Error(), "exceeds the limit") {
		t.Fatalf("err = %v, want the body limit named", err)
	}
}

func TestClient_ReusesConnectionsUnderConcurrency(t *testing.T) {
	const callers, calls = 32, 20
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "{}")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c := newTestClient(t, ClientConfig{Addrs: []string{srv.URL}})
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			for range calls {
				if _, _, err := c.Members(context.Background()); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := conns.Load(); n > 2*callers {
		t.Fatalf("%d connections for %d callers: the pool does not keep them", n, callers)
	}
}

func TestClient_DecodesJobStateAndEvents(t *testing.T) {
	state := fsm.JobState{JobID: "use1-1700000000000-g1-00001", Tenant: "acme", Status: fsm.JobStatusRunning, Fence: 2,
		Spec:    fsm.JobSpec{Tenant: "acme", Regions: []string{"use1"}, Timeout: fsm.Duration(time.Minute)},
		Regions: []fsm.RegionState{{Region: "use1", Accepted: true, WorkerCount: 3, Completed: 10}}}
	events := testEvents(t)
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/events") {
			writeJSON(w, http.StatusOK, EventList{Events: events, NextCursor: "next"})
			return
		}
		writeJSON(w, http.StatusOK, state)
	})
	c := newTestClient(t, ClientConfig{Addrs: []string{rec.srv.URL}})
	st, _, err := c.Job(context.Background(), state.JobID, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.JobID != state.JobID || st.Status != state.Status || len(st.Regions) != 1 || st.Regions[0].Completed != 10 {
		t.Fatalf("state = %+v", st)
	}
	el, _, err := c.JobEvents(context.Background(), state.JobID, Page{}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if el.NextCursor != "next" || len(el.Events) != len(events) {
		t.Fatalf("events = %+v", el)
	}
	for i := range events {
		got, _ := json.Marshal(el.Events[i])
		want, _ := json.Marshal(events[i])
		if string(got) != string(want) {
			t.Errorf("event %d = %s\nwant      %s", i, got, want)
		}
	}
}
