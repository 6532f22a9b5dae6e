package worker

import (
	"encoding/base64"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/progress"
)

// Progress over the data plane against a real progress.Receiver (on
// 127.0.229.1): frames instead of HTTP calls, and HTTP again when the
// data plane cannot be reached.

var testDataPlaneKey = []byte("0123456789abcdef0123456789abcdef")

const testDataPlaneKeyID = 7

// testKeys and testLeases accept the test worker's key and every lease.
type testKeys struct{}

func (testKeys) Key(worker string, keyID uint32) ([]byte, bool) {
	return testDataPlaneKey, worker == testWorkerID && keyID == testDataPlaneKeyID
}

type testLeases struct{}

func (testLeases) Holds(string, string, uint64) bool { return true }

func access(addr string) *api.DataPlaneAccess {
	return &api.DataPlaneAccess{UDPAddr: addr, TCPAddr: addr, KeyID: testDataPlaneKeyID,
		Key: base64.StdEncoding.EncodeToString(testDataPlaneKey)}
}

func TestRunner_ProgressOverTheDataPlane(t *testing.T) {
	for _, network := range []string{ProgressUDP, ProgressTCP} {
		t.Run(network, func(t *testing.T) {
			rcv := startTestReceiver(t)
			addr := rcv.UDPAddr().String()
			if network == ProgressTCP {
				addr = rcv.TCPAddr().String()
			}
			f := newFakeManager(t)
			f.dataPlane = access(addr)
			h := startRunner(t, f, func(c *Config) { c.Progress = network })
			s := spec(10*time.Second, 100, 0.25)
			f.setLeases(lease("wf-a", 1, s))
			f.waitRunning(running(ref("wf-a", 1)))
			h.clock.Advance(4 * time.Second)
			waitUntil(t, "counters at 4 s in the receiver", func() bool {
				p, ok := rcv.Get("wf-a", testWorkerID)
				return ok && p.Completed == 300 && p.Failed == 100 && p.Fence == 1
			})
			h.clock.Advance(7 * time.Second)
			f.waitFor("the end report", func(f *fakeManager) bool { return len(f.ends) > 0 })
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.progress) != 0 {
				t.Fatalf("progress went over HTTP too: %+v", f.progress)
			}
		})
	}
}

// TestRunner_RejectPausesTheDataPlane: under REJECT the worker sends no
// frame for many progress intervals; once the level drops it resumes,
// with the exact counters.
func TestRunner_RejectPausesTheDataPlane(t *testing.T) {
	rcv := startTestReceiver(t)
	f := newFakeManager(t)
	f.dataPlane = access(rcv.UDPAddr().String())
	h := startRunner(t, f, nil)
	f.setLeases(lease("wf-a", 1, spec(10*time.Second, 100, 0.25)))
	waitUntil(t, "a first frame", func() bool { _, ok := rcv.Get("wf-a", testWorkerID); return ok })

	f.mu.Lock()
	f.pressure = api.BackpressureReject
	beats := len(f.beats)
	f.mu.Unlock()
	f.waitFor("a heartbeat answered REJECT", func(f *fakeManager) bool { return len(f.beats) > beats+1 })
	rcv.Drain()
	h.clock.Advance(4 * time.Second)
	// 10 heartbeats (20 ms apart) span 20 progress intervals (10 ms).
	f.mu.Lock()
	beats = len(f.beats)
	f.mu.Unlock()
	f.waitFor("10 heartbeats under REJECT", func(f *fakeManager) bool { return len(f.beats) > beats+10 })
	if changed := rcv.Drain(); len(changed) != 0 {
		t.Fatalf("frames sent under REJECT: %+v", changed)
	}

	f.mu.Lock()
	f.pressure = api.BackpressureNone
	f.mu.Unlock()
	waitUntil(t, "counters at 4 s once the level dropped", func() bool {
		p, ok := rcv.Get("wf-a", testWorkerID)
		return ok && p.Completed == 300 && p.Failed == 100
	})
}

func TestRunner_DataPlaneFallsBackToHTTP(t *testing.T) {
	f := newFakeManager(t)
	f.dataPlane = access("127.0.229.2:1") // nothing listens: every TCP dial fails
	startRunner(t, f, func(c *Config) { c.Progress = ProgressTCP })
	f.setLeases(lease("wf-a", 1, spec(10*time.Second, 100, 0.25)))
	f.waitFor("progress over HTTP", hasProgress("wf-a", 0, 0))
}

// TestRunner_BlockedUDPMovesToTCP: UDP frames vanish (a socket that
// reads and drops them, as a firewall would: every send succeeds), so
// the heartbeats' recorded counters stay behind and still; after the
// stall window the worker sends the same counters over TCP, never HTTP.
func TestRunner_BlockedUDPMovesToTCP(t *testing.T) {
	rcv := startTestReceiver(t)
	hole, err := net.ListenPacket("udp", "127.0.229.3:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hole.Close() })
	var holed atomic.Int64
	go func() {
		buf := make([]byte, 64<<10)
		for {
			if _, _, err := hole.ReadFrom(buf); err != nil {
				return
			}
			holed.Add(1)
		}
	}()
	f := newFakeManager(t)
	f.dataPlane = access(rcv.TCPAddr().String())
	f.dataPlane.UDPAddr = hole.LocalAddr().String()
	f.recorded = func(wf string, fence uint64) api.RecordedProgress { // the ledger holds what arrived
		p, _ := rcv.Get(wf, testWorkerID)
		return api.RecordedProgress{Workflow: wf, LeaseFence: fence, Completed: p.Completed, Failed: p.Failed}
	}
	const window = time.Minute // of the runner's (fake) clock
	h := startRunner(t, f, func(c *Config) { c.StallWindow = window })
	f.setLeases(lease("wf-a", 1, spec(10*time.Minute, 100, 0.25)))
	f.waitRunning(running(ref("wf-a", 1)))
	h.clock.Advance(4 * time.Second)
	waitUntil(t, "frames into the hole", func() bool { return holed.Load() > 2 })
	beats := func() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.beats) }
	n := beats()
	f.waitFor("3 heartbeats that see the ledger behind", func(f *fakeManager) bool { return len(f.beats) > n+3 })
	if _, ok := rcv.Get("wf-a", testWorkerID); ok {
		t.Fatal("a UDP frame arrived through the hole")
	}
	h.clock.Advance(window)
	waitUntil(t, "the counters at 4 s over TCP", func() bool {
		p, ok := rcv.Get("wf-a", testWorkerID)
		return ok && p.Completed >= 300 && p.Failed >= 100
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.progress) != 0 {
		t.Fatalf("progress went over HTTP: %+v", f.progress)
	}
}

func TestPressureStretch(t *testing.T) {
	for level, want := range map[string]time.Duration{api.BackpressureNone: 1, "": 1, api.BackpressureThrottle: 2,
		api.BackpressureBatch: 4, api.BackpressureReject: 0} {
		if got := pressureStretch(level); got != want {
			t.Errorf("pressureStretch(%q) = %d, want %d", level, got, want)
		}
	}
}

// startTestReceiver starts a receiver on 127.0.229.1 (UDP and TCP, free
// ports) that knows the test worker's key and accepts every lease.
func startTestReceiver(t *testing.T) *progress.Receiver {
	t.Helper()
	rcv, err := progress.New(progress.Config{UDPAddr: "127.0.229.1:0", TCPAddr: "127.0.229.1:0", Keys: testKeys{}, Leases: testLeases{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rcv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rcv.Close() })
	return rcv
}

// waitUntil polls cond every few milliseconds for up to 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}
