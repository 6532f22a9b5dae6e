package cluster

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/progress"
)

// The progress data plane on real nodes (subnet 227, reconcilers off, the
// workflows leased by hand as in the worker API test): workers registered
// over HTTP send frames with progress.Sender to the managers'
// data_plane_addr, and the counters reach the regional ledger.

// dpEnv is the data-plane test's cluster and registered workers.
type dpEnv struct {
	*workerEnv
	regs map[string]api.RegisterWorkerResponse
}

func TestDataPlane(t *testing.T) {
	c := startTestCluster(t, 227)
	e := &dpEnv{workerEnv: &workerEnv{t: t, c: c, lead: c.leader(RoleManager), jobID: "use1-1704931200000-gate1-00027"},
		regs: map[string]api.RegisterWorkerResponse{}}
	for _, w := range []string{"dp1", "dp2"} {
		e.regs[w] = e.register(t, e.lead, w, 8, http.StatusCreated)
	}
	t.Run("RegistrationAnswer", func(t *testing.T) { testDataPlaneRegistration(t, e) })
	t.Run("UDPLossAndDuplicates", func(t *testing.T) { testDataPlaneUDP(t, e) })
	t.Run("TCPToFollower", func(t *testing.T) { testDataPlaneTCP(t, e) })
	t.Run("Forged", func(t *testing.T) { testDataPlaneForged(t, e) })
	t.Run("ForgetsEndedLeases", func(t *testing.T) { testDataPlaneForget(t, e) })
}

// key decodes worker's registration key.
func (e *dpEnv) key(t *testing.T, worker string) (uint32, []byte) {
	t.Helper()
	dp := e.regs[worker].DataPlane
	if dp == nil {
		t.Fatalf("registration of %s has no data_plane", worker)
	}
	k, err := base64.StdEncoding.DecodeString(dp.Key)
	if err != nil {
		t.Fatal(err)
	}
	return dp.KeyID, k
}

// sender is a progress.Sender for worker to addr over network.
func (e *dpEnv) sender(t *testing.T, worker, network, addr string, key []byte) *progress.Sender {
	t.Helper()
	id, _ := e.key(t, worker)
	s, err := progress.NewSender(progress.SenderConfig{Addr: addr, Network: network,
		Encoder: progress.EncoderConfig{Worker: worker, KeyID: id, Key: key}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// counters reads a workflow's counters from the regional leader's ledger.
func (e *dpEnv) counters(t *testing.T, id string) (uint64, uint64) {
	wf := e.workflow(t, id)
	return wf.Completed, wf.Failed
}

func testDataPlaneRegistration(t *testing.T, e *dpEnv) {
	dp := e.regs["dp1"].DataPlane
	want := e.c.cfg(e.lead).DataPlaneAddr
	if dp == nil || dp.UDPAddr != want || dp.TCPAddr != want {
		t.Fatalf("data_plane %+v, want the answering manager's %s", dp, want)
	}
	id, key := e.key(t, "dp1")
	if len(key) != 32 {
		t.Fatalf("key of %d bytes", len(key))
	}
	again := e.register(t, e.lead, "dp1", 8, http.StatusOK) // a repeated registration: the same key
	if again.DataPlane == nil || *again.DataPlane != *dp {
		t.Fatalf("repeated registration answered %+v, want %+v", again.DataPlane, dp)
	}
	if other := e.regs["dp2"].DataPlane; other.Key == dp.Key || other.KeyID == dp.KeyID {
		t.Fatal("two registrations share a key or key id")
	}
	for _, m := range []string{"m1", "m2", "m3"} { // every manager derives the same key
		e.c.waitFor(m+" derives dp1's key", func() bool {
			k, ok := e.c.node(m).dp.Keys().Key("dp1", id)
			return ok && string(k) == string(key)
		})
	}
	var hb api.HeartbeatResponse
	r := e.call(e.lead, "POST", "/v1/workers/dp1/heartbeat", `{"running":[]}`)
	r.decode(t, &hb)
	if r.status != http.StatusOK || hb.Backpressure != api.BackpressureNone {
		t.Fatalf("heartbeat %d %s", r.status, r.body)
	}
}

// testDataPlaneUDP: three workflows' counters climb over 200 flushes
// through a proxy that drops 5% of the datagrams and duplicates 5%; the
// ledger ends with exactly the last counters.
func testDataPlaneUDP(t *testing.T, e *dpEnv) {
	var ids []string
	for _, name := range []string{"udp-a", "udp-b", "udp-c"} {
		ids = append(ids, e.dispatch(t, name, "dp1", 1))
	}
	proxy := startLossyProxy(t, "127.0.227.50:0", e.c.cfg(e.lead).DataPlaneAddr, 0.05, 0.05)
	_, key := e.key(t, "dp1")
	s := e.sender(t, "dp1", "udp", proxy.addr(), key)
	const rounds = 200
	final := func(i int) (uint64, uint64) { return uint64(rounds * (7 + i)), uint64(rounds * i) }
	for r := uint64(1); r <= rounds; r++ {
		for i, id := range ids {
			if err := s.Set(progress.Update{Workflow: id, Fence: 1, Completed: r * uint64(7+i), Failed: r * uint64(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	e.c.waitFor("the ledger holds the last counters", func() bool {
		if _, err := s.Flush(); err != nil { // resending is what repairs loss
			t.Fatal(err)
		}
		for i, id := range ids {
			c, f := e.counters(t, id)
			if wc, wf := final(i); c != wc || f != wf {
				if c > wc || f > wf {
					t.Fatalf("%s: %d/%d beyond the last counters %d/%d", id, c, f, wc, wf)
				}
				return false
			}
		}
		return true
	})
	// The heartbeat echoes the ledger's counters of what the worker
	// holds: how a worker learns that its frames arrive.
	var hb api.HeartbeatResponse
	e.call(e.lead, "POST", "/v1/workers/dp1/heartbeat", `{"running":[{"workflow":"`+ids[1]+`","lease_fence":1},{"workflow":"`+ids[2]+`","lease_fence":9}]}`).decode(t, &hb)
	if wc, wf := final(1); len(hb.Recorded) != 1 || hb.Recorded[0] != (api.RecordedProgress{Workflow: ids[1], LeaseFence: 1, Completed: wc, Failed: wf}) {
		t.Fatalf("heartbeat recorded %+v, want %s only (the other names a fence dp1 does not hold)", hb.Recorded, ids[1])
	}
	in, dropped, duped := proxy.stats()
	t.Logf("proxy: %d datagrams, %d dropped, %d duplicated", in, dropped, duped)
	if dropped == 0 || duped == 0 {
		t.Fatalf("the proxy dropped %d and duplicated %d of %d: no loss was tested", dropped, duped, in)
	}
}

// testDataPlaneTCP: the same key works against a follower manager, over
// TCP; the follower forwards the counters to the leader's ledger.
func testDataPlaneTCP(t *testing.T, e *dpEnv) {
	id := e.dispatch(t, "tcp", "dp1", 1)
	follower := e.c.followers(RoleManager)[0]
	_, key := e.key(t, "dp1")
	s := e.sender(t, "dp1", "tcp", e.c.cfg(follower).DataPlaneAddr, key)
	for r := uint64(1); r <= 20; r++ {
		if err := s.Set(progress.Update{Workflow: id, Fence: 1, Completed: 3 * r, Failed: r}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	e.c.waitFor("the follower's counters in the leader's ledger", func() bool {
		if _, err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		c, f := e.counters(t, id)
		return c == 60 && f == 20
	})
}

// testDataPlaneForged: a bad MAC, a fence the lease holder does not hold,
// and another worker's workflow change nothing and are counted.
func testDataPlaneForged(t *testing.T, e *dpEnv) {
	mine := e.dispatch(t, "forged-mine", "dp1", 3)
	theirs := e.dispatch(t, "forged-theirs", "dp2", 1)
	control := e.dispatch(t, "forged-control", "dp1", 1)
	addr := e.c.cfg(e.lead).DataPlaneAddr
	lead := e.c.node(e.lead)
	before := map[string]float64{}
	for _, r := range []string{progress.ReasonBadMAC, progress.ReasonStaleFence} {
		before[r] = droppedTotal(t, lead, r)
	}
	_, key := e.key(t, "dp1")
	bad := append([]byte(nil), key...)
	bad[0] ^= 1
	forgeries := []struct {
		name   string
		key    []byte
		u      progress.Update
		reason string
	}{
		{"bad MAC", bad, progress.Update{Workflow: mine, Fence: 3, Completed: 1000}, progress.ReasonBadMAC},
		{"stale fence", key, progress.Update{Workflow: mine, Fence: 2, Completed: 1000}, progress.ReasonStaleFence},
		{"future fence", key, progress.Update{Workflow: mine, Fence: 4, Completed: 1000}, progress.ReasonStaleFence},
		{"another worker's workflow", key, progress.Update{Workflow: theirs, Fence: 1, Completed: 1000}, progress.ReasonStaleFence},
	}
	want := map[string]float64{}
	for _, f := range forgeries {
		s := e.sender(t, "dp1", "tcp", addr, f.key) // TCP: none is lost on the way
		if err := s.Set(f.u); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Flush(); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		want[f.reason]++
	}
	for reason, n := range want {
		e.c.waitFor(fmt.Sprintf("%v %s drops", n, reason), func() bool { return droppedTotal(t, lead, reason)-before[reason] >= n })
	}
	// A genuine update sent after the forgeries reaches the ledger: every
	// forgery was refused before it, and nothing of theirs followed it.
	s := e.sender(t, "dp1", "tcp", addr, key)
	if err := s.Set(progress.Update{Workflow: control, Fence: 1, Completed: 5}); err != nil {
		t.Fatal(err)
	}
	e.c.waitFor("the genuine update in the ledger", func() bool {
		if _, err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		c, _ := e.counters(t, control)
		return c == 5
	})
	for _, id := range []string{mine, theirs} {
		if c, f := e.counters(t, id); c != 0 || f != 0 {
			t.Fatalf("forged frames changed %s: %d/%d", id, c, f)
		}
	}
}

// droppedTotal reads strata_progress_dropped_total{reason} of node n.
func droppedTotal(t *testing.T, n *Node, reason string) float64 {
	return metricSum(t, n, "strata_progress_dropped_total", func(l map[string]string) bool { return l["reason"] == reason })
}

// metricSum sums the counters of family name on node n whose labels match.
func metricSum(t *testing.T, n *Node, name string, match func(labels map[string]string) bool) float64 {
	t.Helper()
	families, err := n.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if match(labels) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// lossyProxy forwards UDP datagrams to a destination, dropping and
// duplicating a seeded share of them, as a lossy network would.
type lossyProxy struct {
	in, out              net.PacketConn
	dst                  net.Addr
	seen, dropped, duped atomic.Int64
	wg                   sync.WaitGroup
}

func startLossyProxy(t *testing.T, listen, dst string, drop, dup float64) *lossyProxy {
	t.Helper()
	in, err := net.ListenPacket("udp", listen)
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := net.SplitHostPort(listen)
	out, err := net.ListenPacket("udp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	ua, err := net.ResolveUDPAddr("udp", dst)
	if err != nil {
		t.Fatal(err)
	}
	p := &lossyProxy{in: in, out: out, dst: ua}
	rng := rand.New(rand.NewPCG(14, 27))
	p.wg.Go(func() {
		buf := make([]byte, 64<<10)
		for {
			n, _, err := in.ReadFrom(buf)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			p.seen.Add(1)
			copies := 1
			switch x := rng.Float64(); {
			case x < drop:
				p.dropped.Add(1)
				copies = 0
			case x < drop+dup:
				p.duped.Add(1)
				copies = 2
			}
			for range copies {
				_, _ = out.WriteTo(buf[:n], p.dst)
			}
		}
	})
	t.Cleanup(func() { _ = in.Close(); _ = out.Close(); p.wg.Wait() })
	return p
}

func (p *lossyProxy) addr() string { return p.in.LocalAddr().String() }

func (p *lossyProxy) stats() (seen, dropped, duped int64) {
	return p.seen.Load(), p.dropped.Load(), p.duped.Load()
}

// testDataPlaneForget: once a lease ends, the receiver forgets its
// aggregate; a lease still held keeps its own.
func testDataPlaneForget(t *testing.T, e *dpEnv) {
	ended, held := fsm.WorkflowID(e.jobID, "use1", "udp-a", 0), fsm.WorkflowID(e.jobID, "use1", "udp-b", 0) // the UDP test's
	rcv := e.c.node(e.lead).dp.Receiver()
	for _, id := range []string{ended, held} {
		if _, ok := rcv.Get(id, "dp1"); !ok {
			t.Fatalf("no aggregate of %s to forget", id)
		}
	}
	wantResults(t, e.report(t, "dp1", "complete", "", fmt.Sprintf(`{"workflow":%q,"lease_fence":1}`, ended)), "applied")
	e.c.waitFor("the ended lease's aggregate forgotten", func() bool {
		_, ok := rcv.Get(ended, "dp1")
		return !ok
	})
	if _, ok := rcv.Get(held, "dp1"); !ok {
		t.Fatalf("the aggregate of %s, still leased, was forgotten", held)
	}
}

// TestDataPlane_ReferenceWorker: reference workers (cluster/worker) on a
// cluster with reconcilers (subnet 228) report progress over the data
// plane by default; the job ends with exact totals, and no progress went
// over HTTP. While it runs, a watch and GET /v1/jobs/{id} on a gate show
// the live rate and latency percentiles the frames' histograms carry,
// marked not durable.
func TestDataPlane_ReferenceWorker(t *testing.T) {
	c := startLifecycleCluster(t, 228)
	startWorkers(t, c, 2, 4)
	id := lifecycleJob(t, c, 3, "4s", "10m")
	c.waitFor("the job on g1", func() bool { return jobOn(c, "g1", id) != nil })
	watched := make(chan []api.JobLive, 1)
	go func() { watched <- watchLive(t, c, id) }()
	var got api.JobLive // from GET /v1/jobs/{id}
	c.waitFor("live statistics in the job's view", func() bool {
		var v struct {
			Status fsm.JobStatus `json:"status"`
			Live   api.JobLive   `json:"live"`
		}
		c.call("g2", "GET", "/v1/jobs/"+id, testAcmeToken, nil).decode(t, &v)
		if v.Status.Terminal() {
			t.Fatalf("job ended %s and no view showed live statistics", v.Status)
		}
		got = v.Live
		return got["use1"].RequestsPerS > 0
	})
	checkLive(t, "GET /v1/jobs/{id}", got["use1"])
	waitStatus(t, c, id, fsm.JobStatusCompleted)
	if r := jobOn(c, "g1", id).Regions[0]; r.Completed+r.Failed != 3*4*50 {
		t.Fatalf("region state %+v: want 600 simulated requests", r)
	}
	lives := <-watched
	if len(lives) == 0 {
		t.Fatal("the watch sent no live statistics")
	}
	for _, l := range lives {
		checkLive(t, "watch", l["use1"])
	}
	var folded, overHTTP float64
	for _, m := range []string{"m1", "m2", "m3"} {
		n := c.node(m)
		folded += metricSum(t, n, "strata_progress_updates_total", func(map[string]string) bool { return true })
		overHTTP += metricSum(t, n, "strata_http_requests_total", func(l map[string]string) bool {
			return strings.Contains(l["route"], "/progress")
		})
	}
	if folded == 0 || overHTTP != 0 {
		t.Fatalf("%v updates folded from frames, %v progress calls over HTTP: want frames only", folded, overHTTP)
	}
}

// watchLive watches job id on g1 until it ends and returns the live
// statistics the stream sent.
func watchLive(t *testing.T, c *testCluster, id string) []api.JobLive {
	cl, err := api.New(api.ClientConfig{Addrs: []string{c.cfg("g1").HTTPAddr}, Token: testAcmeToken})
	if err != nil {
		t.Error(err)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), nodeTestWait)
	defer cancel()
	var lives []api.JobLive
	err = cl.WatchJobLive(ctx, id, "", func(*fsm.JobState) error { return nil }, func(l api.JobLive) error {
		lives = append(lives, l)
		return nil
	})
	if err != nil {
		t.Errorf("watch: %v", err)
	}
	return lives
}

// checkLive checks a region's live figures against the reference
// worker's synthetic load: half its requests in 2–4 ms and 40 % in 4–8
// ms (so the median of a window lies in one of the two), none over 128
// ms (a window of a few dozen requests may hold none of the slowest 1 %).
func checkLive(t *testing.T, where string, l api.LiveStats) {
	t.Helper()
	if l.Durable || l.Managers < 1 || l.RequestsPerS <= 0 || l.FailedPerS > l.RequestsPerS ||
		l.P50Ms < 2.048 || l.P50Ms > 8.192 || l.P99Ms < l.P50Ms || l.P99Ms > 131.072 {
		t.Fatalf("%s: live %+v", where, l)
	}
}
