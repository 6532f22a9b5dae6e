package httpapi

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

// BenchmarkRequestPath measures the two hot requests of issue 19 through
// the server's whole handler (deadlines, mux, metrics, tracing, auth,
// body, decode, stamp, idempotency, admission, answer), with a Writer that
// answers at once (reqpath_harness_test.go):
//
//   - events:batch: a manager's POST /v1/events:batch?durability=regional
//     of one WorkflowDispatched, as strata bench --tier regional sends it;
//   - jobs: a gate's POST /v1/jobs?durability=global, strata bench's
//     default workload, each with a new idempotency key.
//
// Allocations are the server's: the request and its writer are reused.
func BenchmarkRequestPath(b *testing.B) {
	b.Run("events:batch/events=1", func(b *testing.B) {
		sv, _ := newReqPathServer(b, RoleManager)
		h := sv.srv.Handler
		body := newBatchShape(b, fsm.TypeWorkflowDispatched).request(1)
		c := newReqPathCall(b, "/v1/events:batch?durability=regional")
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if status, out := c.do(h, body); status != http.StatusOK {
				b.Fatalf("status %d: %s", status, out)
			}
		}
	})
	b.Run("jobs/submit", func(b *testing.B) {
		sv, _ := newReqPathServer(b, RoleGate)
		h := sv.srv.Handler
		var bodies submitBodies
		var buf []byte
		c := newReqPathCall(b, "/v1/jobs?durability=global")
		b.ReportAllocs()
		for b.Loop() {
			buf = bodies.next(buf)
			if status, out := c.do(h, buf); status != http.StatusCreated {
				b.Fatalf("status %d: %s", status, out)
			}
		}
	})
}

// reqPathWrites are the two writes the parallel and loopback request-path
// benchmarks send: one event to a manager, one job submit to a gate.
var reqPathWrites = []struct {
	name string
	role Role
	path string
	want int
}{
	{"events:batch/events=1", RoleManager, "/v1/events:batch?durability=regional", http.StatusOK},
	{"jobs/submit", RoleGate, "/v1/jobs?durability=global", http.StatusCreated},
}

// BenchmarkRequestPathParallel is BenchmarkRequestPath from many
// goroutines at once (each its own request), as 64–256 clients load one
// node: what contends (metrics, the idempotency cache, the clock) shows.
func BenchmarkRequestPathParallel(b *testing.B) {
	for _, tc := range reqPathWrites {
		b.Run(tc.name, func(b *testing.B) {
			sv, _ := newReqPathServer(b, tc.role)
			h := sv.srv.Handler
			batch := newBatchShape(b, fsm.TypeWorkflowDispatched).request(1)
			var bodies submitBodies
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				c := newReqPathCall(b, tc.path)
				var local []byte
				for pb.Next() {
					body := batch
					if tc.role == RoleGate {
						local = bodies.next(local)
						body = local
					}
					if status, out := c.do(h, body); status != tc.want {
						panic(fmt.Sprintf("status %d: %s", status, out))
					}
				}
			})
		})
	}
}

// BenchmarkRequestPathLoopback is BenchmarkRequestPath over a real
// socket (127.0.136.1) with one keep-alive client, as strata bench's
// client sends: net/http's cost on both sides is in it (and the client's
// allocations in B/op), so it shows what share of a whole request the
// handler's is.
func BenchmarkRequestPathLoopback(b *testing.B) {
	for _, tc := range reqPathWrites {
		b.Run(tc.name, func(b *testing.B) {
			sv, _ := newReqPathServer(b, tc.role)
			ln, err := net.Listen("tcp", "127.0.136.1:0")
			if err != nil {
				b.Fatal(err)
			}
			sv.Serve(ln)
			defer sv.Close()
			hc := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1, DisableCompression: true}}
			defer hc.CloseIdleConnections()
			url := "http://" + ln.Addr().String() + tc.path
			batch := newBatchShape(b, fsm.TypeWorkflowDispatched).request(1)
			var bodies submitBodies
			var buf []byte
			var out bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				body := batch
				if tc.role == RoleGate {
					buf = bodies.next(buf)
					body = buf
				}
				req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+reqPathToken)
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				out.Reset()
				_, err = out.ReadFrom(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != tc.want {
					b.Fatalf("status %d: %s (%v)", resp.StatusCode, out.Bytes(), err)
				}
			}
		})
	}
}
