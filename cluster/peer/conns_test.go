package peer

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/members"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/faultnet"
	"github.com/strata-ledger/strata/transport/gossip"
)

// Connection reuse between a follower and its leader (issue 19, the
// request path): under many concurrent forwards the follower's calls
// keep reusing a few warm connections instead of opening new ones (a
// new TCP, and TLS, handshake each). Counted at the leader's listener.
// Addresses: 127.0.136.* (this test's subnet).

// countingListener counts the connections it accepts, and the calls
// served over them.
type countingListener struct {
	net.Listener
	accepted, calls atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// appliedProposer leads and applies every batch at once.
type appliedProposer struct{ index atomic.Uint64 }

func (p *appliedProposer) Propose(_ context.Context, batch []byte) (group.Proposal, error) {
	return group.Proposal{Index: p.index.Add(1), Results: []fsm.Result{{Outcome: fsm.OutcomeApplied, Seq: 1}}}, nil
}

func (p *appliedProposer) ProposeMany(ctx context.Context, batches [][]byte) ([]group.Proposal, []error) {
	props, errs := make([]group.Proposal, len(batches)), make([]error, len(batches))
	for i, b := range batches {
		props[i], errs[i] = p.Propose(ctx, b)
	}
	return props, errs
}
func (p *appliedProposer) CheckLeader() error   { return nil }
func (p *appliedProposer) Leader() group.Leader { return group.Leader{ID: "m1"} }

// oneLeader is gossip that knows the leader m1 at addr.
type oneLeader struct{ addr string }

func (o oneLeader) Lookup(id string) (members.Member, bool) {
	if id != "m1" {
		return members.Member{}, false
	}
	return members.Member{Meta: gossip.Meta{NodeID: "m1", Role: gossip.RoleManager, Region: "use1", APIAddr: o.addr}}, true
}
func (o oneLeader) Members() []members.Member { m, _ := o.Lookup("m1"); return []members.Member{m} }

// forwardPair starts leader m1's internal API on 127.0.136.1 and returns
// follower m2's Peers forwarding to it, and the leader's listener.
func forwardPair(t *testing.T) (*Peers, *countingListener) {
	t.Helper()
	faults, err := faultnet.New(faultnet.Config{})
	if err != nil {
		t.Fatal(err)
	}
	leader, err := New(Config{NodeID: "m1", Role: gossip.RoleManager, Region: "use1", Group: "use1", ClusterToken: "cluster-token",
		Faults: faults, Members: oneLeader{}, Proposer: &appliedProposer{}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.136.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	mux := http.NewServeMux()
	for path, h := range leader.Routes() {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) { cl.calls.Add(1); h(w, r) })
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(cl) }()
	t.Cleanup(func() { _ = srv.Close() })
	follower, err := New(Config{NodeID: "m2", Role: gossip.RoleManager, Region: "use1", Group: "use1", ClusterToken: "cluster-token",
		HTTPAddr: "127.0.136.2:7000", Faults: faults, Members: oneLeader{addr: ln.Addr().String()}, Proposer: &appliedProposer{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { follower.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; follower.HTTPClient().CloseIdleConnections() })
	return follower, cl
}

func TestForward_ConcurrentForwardsReuseConnections(t *testing.T) {
	const (
		clients  = 256
		forwards = 100 // each
	)
	follower, ln := forwardPair(t)
	batch, err := fsm.EncodeBatch([]fsm.Event{{ID: fsm.EventID{1}, Type: fsm.TypeWorkerLeft, Tenant: "t",
		Body: &fsm.WorkerLeft{Worker: "w1"}}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range clients {
		wg.Go(func() {
			for range forwards {
				ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
				p, err := follower.Forward(ctx, group.Leader{ID: "m1"}, batch)
				cancel()
				if err != nil || p.Index == 0 {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d forwards failed", n, clients*forwards)
	}
	// The coalescer keeps at most coalesceInFlight calls in flight to a
	// leader: as many connections if they are reused, and at most as many
	// again when a call starts while the connection of the call before it
	// is on its way back to the pool (net/http dials, then keeps both).
	// An answer left unread to its end closes its connection: before,
	// 25,600 forwards opened 27-33 (a new one every few hundred calls).
	calls, conns := ln.calls.Load(), ln.accepted.Load()
	t.Logf("%d forwards from %d clients: %d calls, %d connections", clients*forwards, clients, calls, conns)
	if conns > 2*coalesceInFlight {
		t.Fatalf("%d forwards in %d calls opened %d connections to the leader, want at most %d", clients*forwards, calls, conns, 2*coalesceInFlight)
	}
}
