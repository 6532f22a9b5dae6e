package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/lifecycle"
	"github.com/strata-ledger/strata/cluster/members"
	"github.com/strata-ledger/strata/cluster/tracing"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/memstore"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/faultnet"
	"github.com/strata-ledger/strata/transport/gossip"
	"github.com/strata-ledger/strata/wal"
)

// A whole Server over fakes of what the node gives it, for the request
// path's benchmarks and tests (issue 19, "the request path"): the real
// routes, wrapper, auth, decoding, stamping, idempotency claims, quota
// admission over a real (in-memory) ledger, metrics and answers; a Writer
// that answers at once, as the pipeline does once the batch reached its
// tier, so what is measured is everything the API does per request but
// the NodeWAL and Raft.

// reqPathToken is the benchmarks' token: the operator token strata dev
// prints, which strata bench sends.
const reqPathToken = "strata-reqpath-bench-token-0123456789"

// reqPathRegions are the regions the fake gossip knows (strata dev's).
var reqPathRegions = []string{"use1", "euw1", "apse1"}

// newReqPathServer returns a Server of role (a gate of use1, or a manager
// of use1 that leads its group) and the writer it submits to.
func newReqPathServer(tb testing.TB, role Role) (*Server, *instantWriter) {
	tb.Helper()
	authn, err := auth.NewAuthenticator([]auth.TokenConfig{{Token: reqPathToken, Tenant: auth.AllTenants,
		Scopes: []string{string(auth.ScopeOperator), string(auth.ScopeJobsRead), string(auth.ScopeJobsWrite)}}})
	if err != nil {
		tb.Fatal(err)
	}
	store := memstore.New()
	led, err := fsm.New(fsm.Config{Store: store})
	if err != nil {
		tb.Fatal(err)
	}
	clock, err := hlc.New(hlc.Config{Node: 1, Physical: func() int64 { return time.Now().UnixMilli() }, Persister: &memPersister{}})
	if err != nil {
		tb.Fatal(err)
	}
	node, grp, tier := "m1", "use1", commit.DurabilityRegional
	if role == RoleGate {
		node, grp, tier = "g1", group.GlobalName, commit.DurabilityGlobal
	}
	stamper, err := commit.NewStamper(clock, node, "use1")
	if err != nil {
		tb.Fatal(err)
	}
	jobIDs, err := fsm.NewJobIDGenerator(fsm.JobIDConfig{Region: "use1", Gate: node, Clock: clock.Now})
	if err != nil {
		tb.Fatal(err)
	}
	faults, err := faultnet.New(faultnet.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	w := &instantWriter{tier: tier}
	sv, err := New(Config{NodeID: node, Role: role, Region: "use1", Group: grp, Tier: tier,
		MaxStaleness: time.Second, SessionWait: time.Second, WorkerAckWindow: 5 * time.Second, ClusterToken: "cluster-token",
		Auth: authn, Ledger: led, Store: store, Applied: instantApplied{}, Writer: w, Consensus: leading{id: node},
		Members: newGossipView(node), Peers: fakePeers{}, Workers: noWorkers{}, WAL: noWAL{}, Stamper: stamper, JobIDs: jobIDs,
		Faults: faults, Registry: prometheus.NewRegistry(), Tracer: tracing.Off()})
	if err != nil {
		tb.Fatal(err)
	}
	return sv, w
}

// instantWriter answers every Submit at once, as the pipeline does when
// the batch reached its tier: one applied result per event, a new Raft
// index and NodeWAL LSN per call.
type instantWriter struct {
	tier  commit.Durability
	calls atomic.Uint64
}

func (w *instantWriter) Submit(_ context.Context, events []fsm.Event, level commit.Durability) (commit.SubmitResult, error) {
	n := w.calls.Add(1)
	res := commit.SubmitResult{Level: level, LSN: wal.LSN(n), Results: make([]fsm.Result, len(events))}
	if level == w.tier {
		res.Index = n
	}
	for i := range res.Results {
		res.Results[i] = fsm.Result{Outcome: fsm.OutcomeApplied, Seq: n}
	}
	return res, nil
}
func (w *instantWriter) QueueFill() float64 { return 0 }
func (w *instantWriter) Watermark() wal.LSN { return 0 }

// memPersister keeps the HLC's bound in memory.
type memPersister struct{ ms atomic.Int64 }

func (p *memPersister) Load() (int64, error) { return p.ms.Load(), nil }
func (p *memPersister) Store(ms int64) error { p.ms.Store(ms); return nil }

type instantApplied struct{}

func (instantApplied) Wait(context.Context, uint64) error { return nil }
func (instantApplied) Current() (uint64, <-chan struct{}) { return 0, nil }

// leading is a Raft group this node leads.
type leading struct{ id string }

func (l leading) IsLeader() bool                          { return true }
func (l leading) Leader() group.Leader                    { return group.Leader{ID: l.id} }
func (l leading) LastContact() time.Duration              { return 0 }
func (l leading) ConfirmLeadership(context.Context) error { return nil }
func (l leading) Status() group.Status                    { return group.Status{State: "Leader", Leader: l.Leader()} }
func (l leading) Servers() ([]group.Server, error)        { return nil, nil }
func (l leading) HasServer(string) (bool, error)          { return true, nil }
func (l leading) AddServer(string, string, bool, time.Duration) (uint64, error) {
	return 0, nil
}
func (l leading) RemoveServer(string, time.Duration) (uint64, error) { return 0, nil }
func (l leading) TransferLeadership(string) error                    { return nil }
func (l leading) RestoreSnapshot(uint64, int64, io.Reader, time.Duration) error {
	return nil
}

// gossipView is gossip as a gate of use1 in strata dev sees it: the three
// gates and its region's three managers. Members copies them as
// members.Membership does (a new slice, each member's pools copied).
type gossipView struct{ all []members.Member }

func newGossipView(self string) *gossipView {
	v := &gossipView{}
	add := func(id string, role gossip.Role, region string, pools ...members.Pool) {
		m := members.Member{Meta: gossip.Meta{NodeID: id, Role: role, Region: region, APIAddr: "127.0.136.9:7000"},
			Status: members.MemberAlive}
		for _, p := range pools {
			m.Pools = append(m.Pools, members.PoolMember{Pool: p, Status: members.MemberAlive})
		}
		v.all = append(v.all, m)
	}
	for _, r := range reqPathRegions {
		add("g-"+r, gossip.RoleGate, r, members.PoolWAN)
	}
	for _, id := range []string{"m1", "m2", "m3"} {
		add(id, gossip.RoleManager, "use1", members.PoolLAN)
	}
	_ = self
	return v
}

func (v *gossipView) Members() []members.Member {
	out := make([]members.Member, len(v.all))
	for i, m := range v.all {
		m.Pools = append([]members.PoolMember(nil), m.Pools...)
		out[i] = m
	}
	return out
}

func (v *gossipView) Lookup(id string) (members.Member, bool) {
	for _, m := range v.all {
		if m.Meta.NodeID == id {
			m.Pools = append([]members.PoolMember(nil), m.Pools...)
			return m, true
		}
	}
	return members.Member{}, false
}

type noWorkers struct{}

func (noWorkers) Touch(string)                                      {}
func (noWorkers) Forget(string)                                     {}
func (noWorkers) LeaseView(context.Context, uint64) *lifecycle.View { return nil }
func (noWorkers) ForwarderStatus() (api.ForwarderStatus, bool)      { return api.ForwarderStatus{}, false }

type noWAL struct{}

func (noWAL) Watermarks() wal.Watermarks { return wal.Watermarks{} }
func (noWAL) LastLSN() wal.LSN           { return 0 }

// reqPathCall is one request driven straight into the server's handler,
// reused from call to call so that the allocations counted are the
// server's, not the benchmark's.
type reqPathCall struct {
	req  *http.Request
	body bytes.Reader
	w    discardWriter
}

func newReqPathCall(tb testing.TB, path string) *reqPathCall {
	tb.Helper()
	c := &reqPathCall{}
	req, err := http.NewRequest(http.MethodPost, "http://127.0.136.1:7000"+path, io.NopCloser(&c.body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+reqPathToken)
	req.RemoteAddr = "127.0.136.2:40000"
	c.req = req
	c.w.h = http.Header{}
	return c
}

// do serves body and returns the answer's status and body.
func (c *reqPathCall) do(h http.Handler, body []byte) (int, []byte) {
	c.body.Reset(body)
	c.req.ContentLength = int64(len(body))
	clear(c.w.h)
	c.w.status, c.w.out = 0, c.w.out[:0]
	h.ServeHTTP(&c.w, c.req)
	return c.w.status, c.w.out
}

// discardWriter is a ResponseWriter that keeps the answer in a reused
// buffer; it takes deadlines as a connection's writer does.
type discardWriter struct {
	h      http.Header
	status int
	out    []byte
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *discardWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.out = append(w.out, b...)
	return len(b), nil
}
func (w *discardWriter) SetWriteDeadline(time.Time) error { return nil }
func (w *discardWriter) SetReadDeadline(time.Time) error  { return nil }

// submitBodies makes the bodies of POST /v1/jobs as strata bench sends
// them (test/bench appendJobSpec), each with its own idempotency key.
type submitBodies struct{ seq atomic.Uint64 }

// next appends the next body to dst[:0].
func (s *submitBodies) next(dst []byte) []byte {
	b := append(dst[:0], `{"tenant":"bench","idempotency_key":"`...)
	b = appendHex(b, 0xbad, 8)
	b = append(b, '-')
	b = appendHex(b, 0, 8)
	b = append(b, '-')
	b = appendHex(b, s.seq.Add(1), 16)
	return append(b, `","regions":["use1"],"timeout":"1h","workflows":[{"name":"bench","count":1,"duration":"1m","rate":0,"failure_ratio":0}]}`...)
}

// appendHex appends v as n lowercase hex digits, zero-padded.
func appendHex(b []byte, v uint64, n int) []byte {
	const digits = "0123456789abcdef"
	for i := n - 1; i >= 0; i-- {
		b = append(b, digits[(v>>(4*uint(i)))&0xf])
	}
	return b
}
