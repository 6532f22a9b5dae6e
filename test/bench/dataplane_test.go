package bench

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

func TestDataPlaneConfig_Validate(t *testing.T) {
	ok := DataPlaneConfig{Addrs: []string{"127.0.0.1:7100"}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	tests := []struct {
		name string
		edit func(*DataPlaneConfig)
		want string
	}{
		{"no address", func(c *DataPlaneConfig) { c.Addrs = nil }, "no manager address"},
		{"bad address", func(c *DataPlaneConfig) { c.Addrs = []string{"ftp://x"} }, "address"},
		{"negative workers", func(c *DataPlaneConfig) { c.Workers = -1 }, "workers -1"},
		{"workflows per worker", func(c *DataPlaneConfig) { c.Workers, c.Workflows = 2, 2001 }, "at most 1000"},
		{"workflows below workers", func(c *DataPlaneConfig) { c.Workers, c.Workflows = 3, 2 }, "at least one workflow"},
		{"NaN rate", func(c *DataPlaneConfig) { c.Rate = math.NaN() }, "rate"},
		{"rate too high", func(c *DataPlaneConfig) { c.Rate = 2e8 }, "rate"},
		{"loss 1", func(c *DataPlaneConfig) { c.Loss = 1 }, "loss 1"},
		{"NaN dup", func(c *DataPlaneConfig) { c.Dup = math.NaN() }, "dup"},
		{"transport", func(c *DataPlaneConfig) { c.Transport = "quic" }, `transport "quic"`},
		{"damage over http", func(c *DataPlaneConfig) { c.Transport, c.Dup = TransportHTTP, 0.1 }, "HTTP"},
		{"duration too long", func(c *DataPlaneConfig) { c.Duration = 2 * time.Hour }, "duration"},
		{"tenant", func(c *DataPlaneConfig) { c.Tenant = "a b" }, "tenant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.edit(&c)
			err := c.Validate()
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestDataPlaneConfig_RoundInterval(t *testing.T) {
	c := DataPlaneConfig{Workflows: 1000, Rate: 100_000}
	if got := c.roundInterval(); got != 10*time.Millisecond {
		t.Fatalf("interval %v, want 10ms (each workflow 100 times a second)", got)
	}
	if got := (DataPlaneConfig{Workflows: 10}).roundInterval(); got != 0 {
		t.Fatalf("no rate: interval %v, want 0", got)
	}
}

func TestInjector_NothingToDoIsNil(t *testing.T) {
	if NewInjector(0, 0, false, 1) != nil {
		t.Fatal("an injector that does nothing")
	}
}

func TestInjector_RatesAndReorder(t *testing.T) {
	const rounds, perRound = 2000, 10
	in := NewInjector(0.1, 0.2, true, 42)
	var st InjectStats
	out := 0
	lateSeen := false
	for r := range rounds {
		frames := make([][]byte, perRound)
		for i := range frames {
			frames[i] = []byte{byte(r % 256)}
		}
		sent := in.Round(frames, &st)
		out += len(sent)
		for _, f := range sent {
			if f[0] != byte(r%256) {
				lateSeen = true // a frame of an earlier round after this round's
			}
		}
	}
	out += len(in.Flush())
	total := float64(rounds * perRound)
	if lost := float64(st.Lost) / total; lost < 0.08 || lost > 0.12 {
		t.Errorf("lost %.3f of frames, want about 0.1", lost)
	}
	if dup := float64(st.Duplicated) / (total - float64(st.Lost)); dup < 0.17 || dup > 0.23 {
		t.Errorf("duplicated %.3f of the frames kept, want about 0.2", dup)
	}
	if want := rounds*perRound - int(st.Lost) + int(st.Duplicated); out != want {
		t.Errorf("%d frames out, want %d (every kept frame once, duplicates twice)", out, want)
	}
	if !lateSeen || st.Held == 0 {
		t.Errorf("reorder held %d frames, late frames seen %v", st.Held, lateSeen)
	}
	if len(in.Flush()) != 0 {
		t.Error("Flush twice returned frames")
	}
}

// Cumulative counters through any loss, duplication and reordering: the
// maximum delivered is the last value once it is resent until delivered,
// as the bench's settle phase does.
func TestInjector_CumulativeCountersStayExact(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		in := NewInjector(0.3, 0.3, true, seed)
		var st InjectStats
		var best byte
		fold := func(frames [][]byte) {
			for _, f := range frames {
				best = max(best, f[0])
			}
		}
		for v := byte(1); v <= 200; v++ {
			fold(in.Round([][]byte{{v}}, &st))
		}
		fold(in.Flush())
		for range 100 { // resend the last counters
			if best == 200 {
				break
			}
			fold(in.Round([][]byte{{200}}, &st))
			fold(in.Flush())
		}
		if best != 200 {
			t.Fatalf("seed %d: folded %d, want 200", seed, best)
		}
	}
}

const testMetrics = `# HELP strata_progress_updates_total Progress updates folded.
# TYPE strata_progress_updates_total counter
strata_progress_updates_total 1500
strata_progress_dropped_total{reason="bad_mac"} 2
strata_progress_dropped_total{reason="queue_full"} 10
strata_progress_dropped_total{reason="stale_fence"} 5
process_cpu_seconds_total 3.5
strata_progress_local_seconds_bucket{le="0.5"} 2
strata_progress_local_seconds_bucket{le="0.51"} 9
strata_progress_local_seconds_bucket{le="1"} 10
strata_progress_local_seconds_bucket{le="+Inf"} 10
strata_progress_local_seconds_sum 5.1
strata_progress_local_seconds_count 10
`

func TestParseMetrics(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(testMetrics))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Sum(metricUpdates); got != 1500 {
		t.Errorf("updates %v", got)
	}
	if got := m.ByLabel(metricDropped, "reason"); got["queue_full"] != 10 || got["bad_mac"] != 2 || len(got) != 3 {
		t.Errorf("dropped %v", got)
	}
	b := m.Buckets(metricLocal)
	if len(b) != 4 || b[math.Inf(1)] != 10 {
		t.Errorf("buckets %v", b)
	}
	if _, err := ParseMetrics(strings.NewReader("novalue\n")); err == nil {
		t.Error("a line without a value parsed")
	}
	if _, err := ParseMetrics(strings.NewReader("x{a=\"b\" 1\n")); err == nil {
		t.Error("unbalanced braces parsed")
	}
}

func TestBuckets_Quantile(t *testing.T) {
	b := Buckets{0.5: 2, 0.51: 9, 1: 10, math.Inf(1): 10}
	if got := b.Quantile(0.5); math.Abs(got-(0.5+0.01*3/7)) > 1e-9 {
		t.Errorf("p50 %v", got)
	}
	if got := b.Quantile(0.99); math.Abs(got-(0.51+0.49*0.9)) > 1e-9 {
		t.Errorf("p99 %v", got)
	}
	if got := (Buckets{1: 0, math.Inf(1): 3}).Quantile(0.99); got != 1 {
		t.Errorf("in +Inf: %v, want the highest finite bound", got)
	}
	if got := (Buckets{}).Quantile(0.99); !math.IsNaN(got) {
		t.Errorf("empty: %v", got)
	}
	if got := (Buckets{1: 0, math.Inf(1): 0}).Quantile(0.99); !math.IsNaN(got) {
		t.Errorf("no observation: %v", got)
	}
}

func TestParseSNMP(t *testing.T) {
	const snmp = `Ip: Forwarding DefaultTTL
Ip: 1 64
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 100 2 7 90 5 0 0 0 0
UdpLite: InDatagrams NoPorts InErrors
UdpLite: 0 0 0
`
	c, err := ParseSNMP(strings.NewReader(snmp))
	if err != nil || c.InErrors != 7 || c.RcvbufErrors != 5 || !c.ok {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := ParseSNMP(strings.NewReader("Ip: a\nIp: 1\n")); err == nil {
		t.Error("no Udp lines parsed")
	}
}

func TestAssembleDataPlane(t *testing.T) {
	before, err := ParseMetrics(strings.NewReader(`strata_progress_updates_total 1000
strata_progress_dropped_total{reason="queue_full"} 4
process_cpu_seconds_total 1.5
strata_progress_local_seconds_bucket{le="0.5"} 1
strata_progress_local_seconds_bucket{le="0.51"} 1
strata_progress_local_seconds_bucket{le="1"} 1
strata_progress_local_seconds_bucket{le="+Inf"} 1
`))
	if err != nil {
		t.Fatal(err)
	}
	after, err := ParseMetrics(strings.NewReader(testMetrics))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DataPlaneConfig{Transport: TransportUDP, Workers: 2, Region: "use1"}
	in := dataPlaneInput{cfg: cfg, workflows: 10, elapsed: 2 * time.Second, exact: true, sent: 600, frames: 100,
		before:  dpSnapshot{m: before, udp: UDPCounters{InErrors: 10, RcvbufErrors: 1, ok: true}},
		after:   dpSnapshot{m: after, udp: UDPCounters{InErrors: 13, RcvbufErrors: 3, ok: true}},
		settled: dpSnapshot{m: after}}
	r := assembleDataPlane(in)
	if r.Folded != 500 || r.UpdatesPerSec != 250 || r.SentPerSec != 300 {
		t.Errorf("folded %d at %v/s, sent %v/s", r.Folded, r.UpdatesPerSec, r.SentPerSec)
	}
	if r.DroppedKernel != 3 || r.DroppedKernelBuf != 2 || r.DroppedApp != 13 {
		t.Errorf("dropped kernel %d (%d rcvbuf), app %d", r.DroppedKernel, r.DroppedKernelBuf, r.DroppedApp)
	}
	if r.DroppedAppByReason["queue_full"] != 6 || r.DroppedAppByReason["stale_fence"] != 5 {
		t.Errorf("by reason %v", r.DroppedAppByReason)
	}
	// frames lost: kernel 3 + bad_mac 2 + queue_full 6 (stale_fence counts updates) of 100.
	if math.Abs(r.LossPct-11) > 1e-9 {
		t.Errorf("loss %v %%, want 11", r.LossPct)
	}
	if math.Abs(r.CPUSec-2) > 1e-9 || math.Abs(r.CPUMicrosPer1k-4e6) > 1e-3 {
		t.Errorf("cpu %v s, %v µs per 1k", r.CPUSec, r.CPUMicrosPer1k)
	}
	// Between the reads: 9 flushes, 8 of them within 510 ms; p99 (rank
	// 8.91) falls in (510, 1000] ms.
	if r.P99MsToLocal == nil || math.Abs(*r.P99MsToLocal-(510+490*0.91)) > 1e-6 {
		t.Errorf("p99 to local %v", r.P99MsToLocal)
	}
	if r.P99MsFlush != nil {
		t.Errorf("p99 flush %v without a flush histogram", *r.P99MsFlush)
	}
	if !r.Exact || r.Workflows != 10 {
		t.Errorf("exact %v workflows %d", r.Exact, r.Workflows)
	}

	cfg.Transport = TransportHTTP
	in.cfg, in.acked = cfg, 540
	r = assembleDataPlane(in)
	if r.Folded != 540 || math.Abs(r.LossPct-10) > 1e-9 {
		t.Errorf("http: folded %d, loss %v %%", r.Folded, r.LossPct)
	}
}

func TestMismatched(t *testing.T) {
	want := map[string]Counters{"a": {5, 1}, "b": {7, 0}, "c": {1, 1}}
	wfs := []fsm.WorkflowState{{ID: "a", Completed: 5, Failed: 1}, {ID: "b", Completed: 6}, {ID: "x", Completed: 9}}
	if got := Mismatched(want, wfs); got != 2 {
		t.Fatalf("mismatched %d, want 2 (b behind, c missing)", got)
	}
	wfs[1].Completed = 7
	wfs = append(wfs, fsm.WorkflowState{ID: "c", Completed: 1, Failed: 1})
	if got := Mismatched(want, wfs); got != 0 {
		t.Fatalf("mismatched %d, want 0", got)
	}
}

func TestRenderAndSpliceDataPlane(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	rows := map[string][]*DataPlaneResult{
		"udp": {{UpdatesPerSec: 2_000_000, Exact: true, LossPct: 1, P99MsToLocal: ms(510), P99MsFlush: ms(20)},
			{UpdatesPerSec: 1_000_000, Exact: true, LossPct: 3, P99MsToLocal: ms(520)},
			{UpdatesPerSec: 3_000_000, Exact: false, LossPct: 2}},
		"http": {{UpdatesPerSec: 50_000, Exact: true}},
	}
	body := RenderDataPlane(rows, DataPlaneEnv{When: "now", Machine: "here"})
	for _, want := range []string{
		"| UDP frames, as fast as possible | 3 | 2,000,000 | 40.0× | 2.000 % | 2/3 | 0 µs | 515.0 ms | 20.0 ms |",
		"| HTTP progress calls, as fast as possible | 1 | 50,000 | 1.0× | 0.000 % | 1/1 | 0 µs | — | — |",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("table lacks %q:\n%s", want, body)
		}
	}
	doc := []byte("# Benchmarks\n\n## other\n\ntext\n")
	once := SpliceDataPlane(doc, "first\n")
	twice := SpliceDataPlane(once, "second\n")
	if !strings.Contains(string(twice), "## other\n\ntext\n") || strings.Contains(string(twice), "first") ||
		strings.Count(string(twice), DataPlaneSection) != 1 || !strings.Contains(string(twice), "second\n"+dataPlaneEndMarker) {
		t.Fatalf("spliced:\n%s", twice)
	}
}
