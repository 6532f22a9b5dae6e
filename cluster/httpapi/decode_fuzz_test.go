package httpapi

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/members"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// A fuzz target per request decoder of the API (issue 17): every body a
// handler decodes, and every query parameter it parses. Each asserts that
// decoding never panics, allocates at most a fixed multiple of its input,
// refuses only with a 4xx *APIError, and that what it accepts encodes and
// decodes to itself and validates the same again. (The event batch has
// FuzzDecodeBatchRequest; the fault rules of /v1/debug/faults have
// faultnet's FuzzDecodeRules.)

// leastAlloc is the heap bytes fn allocates, the least of a few runs (the
// counter is process-wide).
func leastAlloc(fn func()) uint64 {
	least := ^uint64(0)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fn()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// allocBound is what decoding n bytes may allocate: a JSON value's
// smallest form ("{}" for a struct of a list) may become a struct of a
// few hundred bytes, and a list grows by doubling.
func allocBound(n int) uint64 { return uint64(512*n + 64<<10) }

// checkRefusal fails unless err is a 4xx *APIError.
func checkRefusal(t *testing.T, what string, err error) {
	t.Helper()
	var ae *httpx.APIError
	if !errors.As(err, &ae) || ae.Status < 400 || ae.Status > 499 || ae.Message == "" {
		t.Fatalf("%s: refused with %T %v, want a 4xx *APIError", what, err, err)
	}
}

// fuzzBody decodes b into a T as the handlers do (httpx.DecodeBytes) with
// bounded allocation, checks it with validate, and, when both accept it,
// that its encoding decodes, encodes the same and validates again.
func fuzzBody[T any](t *testing.T, b []byte, validate func(*T) error) {
	t.Helper()
	if len(b) > httpx.MaxRequestBytes {
		return // readBody refuses it before any decoder runs
	}
	if got, limit := leastAlloc(func() {
		var v T
		_ = httpx.DecodeBytes(b, &v)
	}), allocBound(len(b)); got > limit {
		t.Fatalf("decoding %d bytes allocated %d (limit %d)", len(b), got, limit)
	}
	var v T
	if err := httpx.DecodeBytes(b, &v); err != nil {
		checkRefusal(t, "decode", err)
		return
	}
	verr := validate(&v)
	if verr != nil {
		checkRefusal(t, "validate", verr)
	}
	enc, err := json.Marshal(&v)
	if err != nil {
		if verr == nil {
			t.Fatalf("an accepted %T does not encode: %v", v, err)
		}
		return
	}
	var back T
	if err := httpx.DecodeBytes(enc, &back); err != nil {
		t.Fatalf("%T re-encoded as %s does not decode: %v", v, enc, err)
	}
	if enc2, _ := json.Marshal(&back); !bytes.Equal(enc, enc2) {
		t.Fatalf("%T encodes as %s, then as %s", v, enc, enc2)
	}
	if berr := validate(&back); (berr == nil) != (verr == nil) {
		t.Fatalf("%T validates as %v, re-encoded as %v", v, verr, berr)
	}
}

func seedBodies(f *testing.F, bodies ...string) {
	for _, b := range append(bodies, "", "{}", "null", "[]", `{"x":1}`, "{} {}", `"`+strings.Repeat("a", 300)+`"`) {
		f.Add([]byte(b))
	}
}

// POST /v1/jobs: a job spec, checked by CheckSubmit and then as the
// JobCreated event it becomes.
func FuzzDecodeSubmitJob(f *testing.F) {
	seedBodies(f,
		`{"tenant":"acme","idempotency_key":"k","regions":["use1"],"timeout":"10m","workflows":[{"name":"checkout","count":2,"duration":"30s","rate":200,"failure_ratio":0}]}`,
		`{"tenant":"acme","regions":["use1","euw1"],"timeout":"1h","workflows":[{"name":"a","count":100000,"duration":"24h","rate":1e6}]}`,
		`{"tenant":"acme","regions":["use1"],"timeout":"8760h","workflows":[{"name":"w","count":1,"duration":"1m","rate":1e308}]}`,
		`{"tenant":"","regions":[],"timeout":"-1s","workflows":null}`)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzBody(t, b, func(s *fsm.JobSpec) error {
			if err := s.CheckSubmit(); err != nil {
				return eventError(err)
			}
			e := fsm.Event{ID: fsm.EventID{1}, Type: fsm.TypeJobCreated, JobID: "use1-1704931200000-gate1-00001",
				Tenant: s.Tenant, Region: "use1", Node: "n", HLC: probeHLC, Fence: 1,
				Body: &fsm.JobCreated{Spec: *s, AssignedRegions: s.Regions}}
			if err := e.Validate(); err != nil {
				return eventError(err)
			}
			return nil
		})
	})
}

// POST /v1/jobs/{id}/cancel.
func FuzzDecodeCancelJob(f *testing.F) {
	seedBodies(f, `{"reason":"no longer needed","requestor":"ops"}`, `{"reason":""}`, `{"requestor":1}`)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzBody(t, b, func(req *api.CancelJobRequest) error {
			e := fsm.Event{ID: fsm.EventID{1}, Type: fsm.TypeJobCancellationRequested, JobID: "use1-1704931200000-gate1-00001",
				Tenant: "acme", Region: "use1", Node: "n", HLC: probeHLC, Fence: 2,
				Body: &fsm.JobCancellationRequested{Reason: req.Reason, Requestor: req.Requestor + "x"}}
			if err := e.Validate(); err != nil {
				return eventError(err)
			}
			return nil
		})
	})
}

// POST /v1/workers.
func FuzzDecodeRegisterWorker(f *testing.F) {
	sv := &Server{cfg: Config{Region: "use1"}}
	seedBodies(f, `{"worker_id":"w1","region":"use1","capacity":4}`, `{"region":"use1","capacity":1000}`,
		`{"worker_id":"..","region":"use1","capacity":1}`, `{"region":"euw1","capacity":0}`, `{"capacity":-1}`, `{"capacity":4294967296}`)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzBody(t, b, func(req *api.RegisterWorkerRequest) error { return sv.checkRegistration(req) })
	})
}

// POST /v1/workers/{id}/heartbeat.
func FuzzDecodeHeartbeat(f *testing.F) {
	seedBodies(f, `{"running":[{"workflow":"wf-1","lease_fence":3}]}`, `{"running":[]}`, `{"running":[{"workflow":"","lease_fence":0}]}`,
		`{"running":[`+strings.Repeat(`{"workflow":"a","lease_fence":1},`, 40)+`{}]}`)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzBody(t, b, func(req *api.HeartbeatRequest) error { return checkRunning(req.Running) })
	})
}

// POST /v1/workers/{id}/progress.
func FuzzDecodeProgress(f *testing.F) {
	seedBodies(f, `{"updates":[{"workflow":"wf-1","lease_fence":1,"completed":10,"failed":1,"stats":{"p50_ms":3}}]}`,
		`{"updates":[{"workflow":"a","lease_fence":1},{"workflow":"a","lease_fence":1}]}`, `{"updates":[]}`, `{"updates":[{"stats":{"x":-1}}]}`)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzBody(t, b, func(req *api.ProgressRequest) error {
			reps, err := progressReports(req.Updates)
			if err == nil && len(reps) != len(req.Updates) {
				t.Fatalf("%d updates became %d reports", len(req.Updates), len(reps))
			}
			return err
		})
	})
}

// POST /v1/workers/{id}/complete and /fail.
func FuzzDecodeWorkflowEnd(f *testing.F) {
	seedBodies(f, `{"workflow":"wf-1","lease_fence":2,"completed":5}`, `{"workflow":"wf-1","lease_fence":2,"error":"boom"}`,
		`{"workflow":"wf-1","lease_fence":0}`, `{"workflow":"wf-1","lease_fence":1,"stats":{"a":1},"error":""}`)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, et := range []fsm.EventType{fsm.TypeWorkflowCompleted, fsm.TypeWorkflowFailed} {
			fuzzBody(t, b, func(req *api.WorkflowEndRequest) error {
				rp, err := endReport(et, req)
				if err == nil && (rp.end == nil || rp.workflow != req.Workflow || rp.fence != req.LeaseFence) {
					t.Fatalf("%s of %+v: report %+v", et, req, rp)
				}
				return err
			})
		}
	})
}

// POST /v1/cluster/raft/join and /transfer-leadership (handleJoin's and
// handleTransfer's checks).
func FuzzDecodeJoinAndTransfer(f *testing.F) {
	seedBodies(f, `{"node_id":"m4","raft_addr":"10.0.0.4:7200"}`, `{"node_id":"M4!","raft_addr":"nope","non_voter":true}`,
		`{"to":"m2"}`, `{"to":""}`)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzBody(t, b, func(req *api.JoinRequest) error {
			if !members.IsNodeID(req.NodeID) {
				return httpx.BadRequest("node_id %q must be 1-63 of [a-z0-9_-]", req.NodeID)
			}
			if _, _, err := net.SplitHostPort(req.RaftAddr); err != nil {
				return httpx.BadRequest("raft_addr %q is not host:port", req.RaftAddr)
			}
			return nil
		})
		fuzzBody(t, b, func(*api.TransferRequest) error { return nil })
	})
}

// fuzzRequest is a GET of path with query q and a session header.
func fuzzRequest(q url.Values, session string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/v1/jobs", nil)
	r.URL.RawQuery = q.Encode()
	if session != "" {
		r.Header.Set(api.HeaderSession, session)
	}
	return r
}

// The query parameters of reads and writes: consistency=, max_staleness=
// and the session header (parseReadOpts), durability= (parseWriteLevel,
// checkLevel), limit= and status= of lists, index= and wait= of a lease
// poll (and capLeaseWait of a forwarded one), and the chain
// verification's after=, link=, limit=.
func FuzzParseQuery(f *testing.F) {
	sv := &Server{cfg: Config{Group: "global", MaxStaleness: time.Second}}
	f.Add("strong", "", "", "", "", "", "", "")
	f.Add("session", "500ms", "global:42", "global", "50", "RUNNING", "7", "30s")
	f.Add("bounded", "-1s", "use1:0", "regional", "0", "bogus", "x", "31s")
	f.Add("eventual", "1h", ":", "none", "1001", "", "18446744073709551616", "-1ns")
	f.Add("session", "", "", "local", "2", "COMPLETED", "0", "1e3s")
	f.Fuzz(func(t *testing.T, consistency, staleness, session, durability, limit, status, index, wait string) {
		q := url.Values{}
		for k, v := range map[string]string{api.ParamConsistency: consistency, api.ParamMaxStaleness: staleness,
			api.ParamDurability: durability, "limit": limit, "status": status, "index": index, "wait": wait} {
			if v != "" {
				q.Set(k, v)
			}
		}
		r := fuzzRequest(q, session)
		if o, err := sv.parseReadOpts(r); err != nil {
			checkRefusal(t, "read options", err)
		} else if o.maxStaleness <= 0 || (o.consistency == api.ConsistencySession && o.session == 0) {
			t.Fatalf("accepted read options %+v", o)
		}
		if d, err := parseWriteLevel(r); err != nil {
			checkRefusal(t, "durability", err)
		} else if d != 0 {
			for _, tier := range []string{"regional", "global"} {
				tr := fuzzRequest(url.Values{api.ParamDurability: {tier}}, "")
				td, _ := parseWriteLevel(tr)
				if err := checkLevel(d, td); err != nil {
					checkRefusal(t, "level", err)
				}
			}
		}
		if limit != "" {
			if v, err := parseLimit(limit); err != nil {
				checkRefusal(t, "limit", err)
			} else if v < 1 || v > fsm.MaxListLimit {
				t.Fatalf("limit %q accepted as %d", limit, v)
			}
		}
		if status != "" {
			if st, err := fsm.ParseJobStatus(status); err == nil && st.String() != status {
				t.Fatalf("status %q parses as %s", status, st)
			}
		}
		if idx, w, err := parseLeasePoll(r); err != nil {
			checkRefusal(t, "lease poll", err)
		} else {
			if w < 0 || w > api.MaxLeaseWait {
				t.Fatalf("lease wait %q accepted as %s", wait, w)
			}
			capLeaseWait(r)
			if idx2, w2, err := parseLeasePoll(r); err != nil || idx2 != idx || w2 > MaxForwardedLeaseWait || w2 > w {
				t.Fatalf("capped lease poll %q: %d %s %v (was %d %s)", r.URL.RawQuery, idx2, w2, err, idx, w)
			}
		}
		if cur, err := parseVerifyCursor(index, session, limit); err != nil {
			checkRefusal(t, "chain cursor", err)
		} else if cur.limit < 1 || cur.limit > MaxVerifyEvents || (cur.link != nil && cur.after == 0) {
			t.Fatalf("chain cursor %q %q %q accepted as %+v", index, session, limit, cur)
		}
	})
}

// The Strata-Forwarded-By hops of a request, with or without their MAC:
// never a panic, and hops are trusted only when signed with the key.
func FuzzTrustedHops(f *testing.F) {
	const key = "cluster-token-0123456789"
	signed := httptest.NewRequest(http.MethodGet, "/v1/jobs", nil)
	signHops(signed, []string{"g1", "m2"}, key)
	f.Add(http.MethodGet, "/v1/jobs", strings.Join(signed.Header.Values(api.HeaderForwardedBy), ","), signed.Header.Get(headerForwardMAC))
	f.Add(http.MethodPost, "/v1/jobs?x=1", "g1,,g2", "zz")
	f.Add("GET", "/", strings.Repeat("a,", 100), strings.Repeat("0", 64))
	f.Fuzz(func(t *testing.T, method, path, hops, mac string) {
		r, err := http.NewRequest(method, "http://x"+path, nil)
		if err != nil || r.URL.Path == "" {
			return
		}
		r.RequestURI = r.URL.RequestURI()
		for h := range strings.SplitSeq(hops, ",") {
			r.Header.Add(api.HeaderForwardedBy, h)
		}
		r.Header.Set(headerForwardMAC, mac)
		got := trustedHops(r, key)
		if len(got) == 0 {
			return
		}
		// Trusted: the same hops signed anew carry the same MAC.
		again, _ := http.NewRequest(method, "http://x"+path, nil)
		signHops(again, got, key)
		want, _ := hex.DecodeString(again.Header.Get(headerForwardMAC))
		if sent, err := hex.DecodeString(mac); err != nil || !bytes.Equal(sent, want) {
			t.Fatalf("hops %q trusted with MAC %q, signed they carry %x", got, mac, want)
		}
		if len(trustedHops(r, key+"x")) != 0 {
			t.Fatalf("hops %q trusted under another key", got)
		}
	})
}
