package boltstore_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
	"github.com/strata-ledger/strata/hlc"
)

// The regional workload of `strata bench --tier regional`
// (test/bench/workload.go, generator.event): every client dispatches
// workflows {job}/{region}/{name}/{instance} of its own job id, which the
// regional ledger never saw created, one event per request; the leader
// packs the requests of many clients into each Raft entry.
const (
	regionalClients   = 256
	regionalBatch     = 50  // events per Raft entry, as profiled
	regionalBodyBytes = 200 // test/bench DefaultPayloadBytes
	// regionalStreamEvents is applied to an empty store, then the store
	// is reset (as BenchStreamEvents for BenchmarkLedgerApply).
	regionalStreamEvents = 200_000
	// regionalGroupedBatch is what one transaction would hold if the
	// Ledger applied the entries of a Raft ApplyBatch together (4).
	regionalGroupedBatch = 4 * regionalBatch
	regionalTenant       = "bench"
	regionalRegion       = "use1"
	regionalNode         = "bench"
	regionalNonce        = 0x5eed1234
	regionalStartMs      = 1_767_225_600_000
	// regionalEventsPerMs paces the HLC wall clock (a few thousand events
	// per second per manager).
	regionalEventsPerMs = 8
)

// regionalClient is one client's part of the workload (test/bench's
// generator for the workflow-dispatched workload).
type regionalClient struct {
	id    uint32
	jobID string
	name  string
	seq   uint64
	// lifecycle: the client's workflows live their whole life, as a
	// region's workers make them (lifecyclePhases events each), instead
	// of being dispatched only.
	lifecycle bool
}

// lifecyclePhases: dispatched, leased, three progress reports, completed.
const lifecyclePhases = 6

// regionalWorker holds the leases of the lifecycle workload.
const regionalWorker = "bench-worker"

func newRegionalClient(id uint32, name string) *regionalClient {
	gate := fmt.Sprintf("b%08xc%d", uint32(regionalNonce), id)
	jobID := fsm.JobID{Region: regionalRegion, UnixMs: regionalStartMs, Gate: gate, Seq: 1}.String()
	return &regionalClient{id: id, jobID: jobID, name: name}
}

// next returns the client's next event, stamped at wall ms.
func (c *regionalClient) next(wall int64) fsm.Event {
	seq := c.seq
	c.seq++
	var id fsm.EventID
	binary.BigEndian.PutUint32(id[0:], regionalNonce)
	binary.BigEndian.PutUint32(id[4:], c.id)
	binary.BigEndian.PutUint64(id[8:], seq)
	instance, phase := uint32(seq), uint64(0)
	if c.lifecycle {
		instance, phase = uint32(seq/lifecyclePhases), seq%lifecyclePhases
	}
	wf := fsm.WorkflowID(c.jobID, regionalRegion, c.name, instance)
	var body fsm.Body
	fence := uint64(0)
	switch phase {
	case 0:
		body = &fsm.WorkflowDispatched{Workflow: wf, Name: c.name, Instance: instance,
			Spec: fsm.WorkflowSpec{Name: c.name, Count: 1, Duration: fsm.Duration(time.Minute)}}
	case 1:
		body = &fsm.WorkflowLeased{Workflow: wf, Worker: regionalWorker, LeaseUntilMs: wall + 60_000, LeaseFence: 1}
	case lifecyclePhases - 1:
		body, fence = &fsm.WorkflowCompleted{Workflow: wf}, 1
	default:
		body, fence = &fsm.WorkflowProgress{Workflow: wf, Completed: phase * 100, Failed: phase}, 1
	}
	return fsm.Event{
		ID: id, Type: body.EventType(), JobID: c.jobID, Tenant: regionalTenant,
		Region: regionalRegion, Node: regionalNode, Fence: fence,
		HLC:  hlc.Timestamp{WallMs: wall, Logical: uint32(seq), Node: c.id + 1},
		Body: body,
	}
}

// workerJoined registers the worker of the lifecycle workload.
func workerJoined() fsm.Event {
	var id fsm.EventID
	binary.BigEndian.PutUint32(id[0:], regionalNonce+1)
	return fsm.Event{ID: id, Type: fsm.TypeWorkerJoined, Region: regionalRegion, Node: regionalNode,
		HLC:  hlc.Timestamp{WallMs: regionalStartMs, Node: 1},
		Body: &fsm.WorkerJoined{Worker: regionalWorker, Capacity: regionalClients}}
}

// regionalName pads the workflow name as test/bench does: the body size
// closest to regionalBodyBytes.
func regionalName(tb testing.TB) string {
	best, bestDiff := "", -1
	for pad := 0; pad <= fsm.MaxNameBytes-len("bench"); pad++ {
		name := "bench" + strings.Repeat("w", pad)
		e := newRegionalClient(0, name).next(regionalStartMs)
		b, err := fsm.AppendBody(nil, e.Body)
		if err != nil {
			tb.Fatal(err)
		}
		if d := abs(len(b) - regionalBodyBytes); bestDiff < 0 || d < bestDiff {
			best, bestDiff = name, d
		}
	}
	return best
}

func abs(n int) int { return max(n, -n) }

// regionalStream returns n encoded batches (Raft entries) of the
// workload: in each round every client sends its next event, clients in
// a random order, and the events are cut into batches of size.
//
// lifecycle makes the clients' workflows live their whole life (after a
// first event that registers their worker).
func regionalStream(tb testing.TB, n, size int, lifecycle bool) [][]byte {
	name := regionalName(tb)
	clients := make([]*regionalClient, regionalClients)
	for i := range clients {
		clients[i] = newRegionalClient(uint32(i), name)
		clients[i].lifecycle = lifecycle
	}
	rng := rand.New(rand.NewPCG(5, 6))
	order := make([]int, regionalClients)
	for i := range order {
		order[i] = i
	}
	out := make([][]byte, 0, n)
	batch := make([]fsm.Event, 0, size)
	if lifecycle {
		batch = append(batch, workerJoined())
	}
	sent := 0
	for len(out) < n {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, c := range order {
			batch = append(batch, clients[c].next(regionalStartMs+int64(sent/regionalEventsPerMs)))
			sent++
			if len(batch) == size {
				b, err := fsm.EncodeBatch(batch)
				if err != nil {
					tb.Fatal(err)
				}
				out = append(out, b)
				batch = batch[:0]
				if len(out) == n {
					break
				}
			}
		}
	}
	return out
}

// BenchmarkRegionalApply applies the regional workload through
// Ledger.ApplyEncoded (the Raft FSM's path) to a NoSync bbolt store that
// starts empty and is reset, timer stopped, every regionalStreamEvents.
// events=50 is one Raft entry per transaction, as the managers run it;
// events=200 measures what applying four entries in one transaction would
// save (it is not what cluster does). Besides events/s and the process
// CPU per event it reports, per transaction, what bbolt did: pages
// written, nodes split and spilled, nodes materialized and rebalanced.
// Costs grow with the tree: compare runs of one -benchtime (2000x is
// 100,000 events at events=50; a few seconds of a manager under bench).
//
// commit=group is events=50 with group commit as a node runs it
// (boltstore.NodeCommitInterval, default CommitUpdates): Raft entries
// share transactions; pages/tx then counts per entry (Update).
// lifecycle/commit=group is the same with every workflow leased to a
// worker, reported on three times and completed (lifecyclePhases events
// per workflow, ~255 other events between two of one workflow): what a
// region with workers applies besides the dispatches.
func BenchmarkRegionalApply(b *testing.B) {
	for _, size := range []int{regionalBatch, regionalGroupedBatch} {
		b.Run(fmt.Sprintf("events=%d", size), func(b *testing.B) {
			benchRegional(b, regionalStream(b, regionalStreamEvents/size, size, false), size, 0)
		})
	}
	b.Run(fmt.Sprintf("events=%d/commit=group", regionalBatch), func(b *testing.B) {
		benchRegional(b, regionalStream(b, regionalStreamEvents/regionalBatch, regionalBatch, false), regionalBatch,
			boltstore.NodeCommitInterval)
	})
	b.Run(fmt.Sprintf("events=%d/lifecycle/commit=group", regionalBatch), func(b *testing.B) {
		benchRegional(b, regionalStream(b, regionalStreamEvents/regionalBatch, regionalBatch, true), regionalBatch,
			boltstore.NodeCommitInterval)
	})
}

func benchRegional(b *testing.B, stream [][]byte, size int, interval time.Duration) {
	b.ReportAllocs()
	var st *boltstore.Store
	var led *fsm.Ledger
	var index uint64
	var total bboltTotals
	open := func() {
		if st != nil {
			total.add(st.TxStats())
			if err := st.Close(); err != nil {
				b.Fatal(err)
			}
		}
		var err error
		cfg := boltstore.WithStatistics(boltstore.Config{Path: filepath.Join(b.TempDir(), "ledger.db"), CommitInterval: interval})
		if st, err = boltstore.Open(cfg); err != nil {
			b.Fatal(err)
		}
		if led, err = fsm.New(fsm.Config{Store: st}); err != nil {
			b.Fatal(err)
		}
		index = 0
	}
	open()
	batches := 0
	var cpu cpuMeter
	for b.Loop() {
		if batches == 0 {
			cpu.start()
		}
		if index == uint64(len(stream)) {
			b.StopTimer()
			cpu.stop()
			open()
			cpu.start()
			b.StartTimer()
		}
		index++
		res, err := led.ApplyEncoded(index, stream[index-1])
		if err != nil {
			b.Fatal(err)
		}
		for i := range res {
			if res[i].Outcome != fsm.OutcomeApplied {
				b.Fatalf("batch %d, event %d: %s: %v", index, i, res[i].Outcome, res[i].Err)
			}
		}
		batches++
	}
	b.StopTimer()
	cpu.stop()
	total.add(st.TxStats())
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	events := float64(batches * size)
	b.ReportMetric(events/b.Elapsed().Seconds(), "events/s")
	if cpu.ok {
		b.ReportMetric(float64(cpu.spent.Nanoseconds())/events, "cpu-ns/event")
	}
	// Read transactions (one per Ledger) are counted too, and write none.
	tx := float64(batches)
	b.ReportMetric(float64(total.write)/tx, "pages/tx")
	b.ReportMetric(float64(total.split)/tx, "splits/tx")
	b.ReportMetric(float64(total.spill)/tx, "spills/tx")
	b.ReportMetric(float64(total.node)/tx, "nodes/tx")
	b.ReportMetric(float64(total.rebalance)/tx, "rebalances/tx")
}

// bboltTotals sums bbolt's statistics over the stores of one benchmark.
type bboltTotals struct{ write, split, spill, node, rebalance int64 }

func (t *bboltTotals) add(s bolt.TxStats) {
	t.write += s.GetWrite()
	t.split += s.GetSplit()
	t.spill += s.GetSpill()
	t.node += s.GetNodeCount()
	t.rebalance += s.GetRebalance()
}

// cpuMeter adds up the process CPU time of the measured stretches: on a
// shared machine it varies less than the wall clock.
type cpuMeter struct {
	spent, at time.Duration
	ok        bool
}

func (m *cpuMeter) start() { m.at, m.ok = processCPU() }

func (m *cpuMeter) stop() {
	if now, ok := processCPU(); ok && m.ok {
		m.spent += now - m.at
	}
}
