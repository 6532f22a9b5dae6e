package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

func TestWorkerClient_RequestsMatchTheAPI(t *testing.T) {
	rec := newRecorder(t, nil)
	c := newTestClient(t, ClientConfig{Addrs: []string{rec.srv.URL}, Token: "tok-123"})
	ctx := context.Background()
	end := &WorkflowEndRequest{Workflow: "j/use1/a/0", LeaseFence: 2, Completed: 5, Stats: fsm.Stats{{Name: "req", Value: 5}}}
	tests := []struct {
		name        string
		call        func() error
		method      string
		path, query string
		body        string // JSON, "" for none
	}{
		{"register", func() error {
			_, _, err := c.RegisterWorker(ctx, &RegisterWorkerRequest{WorkerID: "w1", Region: "use1", Capacity: 4})
			return err
		}, "POST", "/v1/workers", "", `{"worker_id":"w1","region":"use1","capacity":4}`},
		{"register, id chosen by the manager", func() error {
			_, _, err := c.RegisterWorker(ctx, &RegisterWorkerRequest{Region: "use1", Capacity: 1})
			return err
		}, "POST", "/v1/workers", "", `{"region":"use1","capacity":1}`},
		{"deregister", func() error { _, err := c.DeregisterWorker(ctx, "w1"); return err }, "DELETE", "/v1/workers/w1", "", ""},
		{"heartbeat", func() error {
			_, _, err := c.Heartbeat(ctx, "w1", &HeartbeatRequest{Running: []RunningWorkflow{{Workflow: "j/use1/a/0", LeaseFence: 2}}})
			return err
		}, "POST", "/v1/workers/w1/heartbeat", "", `{"running":[{"workflow":"j/use1/a/0","lease_fence":2}]}`},
		{"leases", func() error { _, _, err := c.Leases(ctx, "w1", 7, 2*time.Second); return err },
			"GET", "/v1/workers/w1/leases", "index=7&wait=2s", ""},
		{"leases, the manager's wait", func() error { _, _, err := c.Leases(ctx, "w1", 0, 0); return err },
			"GET", "/v1/workers/w1/leases", "index=0", ""},
		{"progress", func() error {
			_, _, err := c.ReportProgress(ctx, "w1", &ProgressRequest{Updates: []ProgressUpdate{{Workflow: "j/use1/a/0", LeaseFence: 2, Completed: 3}}},
				WriteOptions{Durability: DurabilityLocal})
			return err
		}, "POST", "/v1/workers/w1/progress", "durability=local",
			`{"updates":[{"workflow":"j/use1/a/0","lease_fence":2,"completed":3,"failed":0}]}`},
		{"complete", func() error { _, _, err := c.CompleteWorkflow(ctx, "w1", end, WriteOptions{}); return err },
			"POST", "/v1/workers/w1/complete", "", `{"workflow":"j/use1/a/0","lease_fence":2,"completed":5,"failed":0,"stats":{"req":5}}`},
		{"fail", func() error {
			_, _, err := c.FailWorkflow(ctx, "w1", &WorkflowEndRequest{Workflow: "j/use1/a/0", LeaseFence: 2, Error: "boom"},
				WriteOptions{Durability: "REGIONAL"})
			return err
		}, "POST", "/v1/workers/w1/fail", "durability=regional", `{"workflow":"j/use1/a/0","lease_fence":2,"completed":0,"failed":0,"error":"boom"}`},
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
			}
			if a := got.Header.Get("Authorization"); a != "Bearer tok-123" {
				t.Errorf("Authorization = %q", a)
			}
		})
	}
}

func TestWorkerClient_RefusesBadCallsBeforeSending(t *testing.T) {
	rec := newRecorder(t, nil)
	c := newTestClient(t, ClientConfig{Addrs: []string{rec.srv.URL}})
	ctx := context.Background()
	calls := map[string]func() error{
		"empty id":        func() error { _, _, err := c.Heartbeat(ctx, "", &HeartbeatRequest{}); return err },
		"empty id, leave": func() error { _, err := c.DeregisterWorker(ctx, ""); return err },
		"negative wait":   func() error { _, _, err := c.Leases(ctx, "w1", 0, -time.Second); return err },
		"wait over max":   func() error { _, _, err := c.Leases(ctx, "w1", 0, MaxLeaseWait+time.Second); return err },
		"bad durability": func() error {
			_, _, err := c.ReportProgress(ctx, "w1", &ProgressRequest{}, WriteOptions{Durability: "soon"})
			return err
		},
	}
	for name, call := range calls {
		if err := call(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if got := rec.requests(); len(got) != 0 {
		t.Fatalf("sent %d requests", len(got))
	}
}

// A lease poll without a wait waits as long as the manager's default: the
// client's per-attempt timeout must not cut it.
func TestWorkerClient_LeasePollOutlivesTheAttemptTimeout(t *testing.T) {
	const hold = 300 * time.Millisecond
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		<-time.After(hold) // the manager holding the poll
		writeJSON(w, http.StatusOK, LeaseList{Index: 9, Leases: []Lease{{Workflow: "j/use1/a/0", LeaseFence: 1}}})
	})
	c := newTestClient(t, ClientConfig{Addrs: []string{rec.srv.URL}, Timeout: hold / 3})
	ll, _, err := c.Leases(context.Background(), "w1", 8, 0)
	if err != nil || ll.Index != 9 || len(ll.Leases) != 1 {
		t.Fatalf("Leases = %+v, %v", ll, err)
	}
}

func TestWorkerClient_UnknownWorkerIsATypedError(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, ErrorEnvelope{Error: &Error{Code: CodeUnknownWorker, Message: "register again"}})
	})
	c := newTestClient(t, ClientConfig{Addrs: []string{rec.srv.URL}})
	_, _, err := c.Heartbeat(context.Background(), "w1", &HeartbeatRequest{})
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound || ae.Code != CodeUnknownWorker || !strings.Contains(ae.Message, "register") {
		t.Fatalf("err = %v", err)
	}
}
