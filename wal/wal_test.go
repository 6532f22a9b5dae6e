package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/strata-ledger/strata/hlc"
)

// testConfig is a small-segment config in a fresh directory.
func testConfig(t testing.TB) Config {
	t.Helper()
	return Config{Dir: t.TempDir(), SegmentBytes: MinSegmentBytes, MaxBatchBytes: 16 << 10}
}

func mustOpen(t testing.TB, cfg Config) *WAL {
	t.Helper()
	w, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// testRecord is record i of a test: its payload names i, so a record read
// back can be checked against what was written.
func testRecord(i int) Record {
	return Record{
		Type:    uint8(1 + i%7),
		HLC:     hlc.Timestamp{WallMs: 1704931200000 + int64(i), Logical: uint32(i % 3), Node: 7},
		Payload: fmt.Appendf(nil, "record-%06d-%s", i, bytes.Repeat([]byte{'x'}, i%50)),
	}
}

func appendN(t testing.TB, w *WAL, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if _, err := w.Append(context.Background(), testRecord(i)); err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
	}
}

// readAll replays the whole log and returns copies of its entries.
func readAll(t testing.TB, w *WAL, from LSN) []Entry {
	t.Helper()
	it, err := w.Iterator(from)
	if err != nil {
		t.Fatalf("Iterator(%d): %v", from, err)
	}
	defer it.Close()
	var out []Entry
	for it.Next() {
		e := it.Entry()
		e.Payload = bytes.Clone(e.Payload)
		out = append(out, e)
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	return out
}

// checkEntries checks that got holds test records first..first+len-1 with
// LSNs starting at lsn.
func checkEntries(t testing.TB, got []Entry, lsn LSN, first int) {
	t.Helper()
	for k, e := range got {
		want := testRecord(first + k)
		if e.LSN != lsn+LSN(k) || e.Type != want.Type || e.HLC != want.HLC || e.State != Pending || !bytes.Equal(e.Payload, want.Payload) {
			t.Fatalf("entry %d = {%d %d %v %v %q}, want LSN %d record %d", k, e.LSN, e.Type, e.State, e.HLC, e.Payload, lsn+LSN(k), first+k)
		}
	}
}

func TestAppend_ReturnsConsecutiveLSNsFromOne(t *testing.T) {
	w := mustOpen(t, testConfig(t))
	for i := range 5 {
		lsn, err := w.Append(context.Background(), testRecord(i))
		if err != nil || lsn != LSN(i+1) {
			t.Fatalf("Append %d = %d, %v; want %d", i, lsn, err, i+1)
		}
	}
	if got := w.LastLSN(); got != 5 {
		t.Fatalf("LastLSN = %d, want 5", got)
	}
	checkEntries(t, readAll(t, w, 0), 1, 0)
}

func TestReopen_KeepsRecordsAndContinuesLSNs(t *testing.T) {
	cfg := testConfig(t)
	w := mustOpen(t, cfg)
	appendN(t, w, 0, 2000) // several segments of 64 KiB
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = mustOpen(t, cfg)
	if got := w.LastLSN(); got != 2000 {
		t.Fatalf("LastLSN after reopen = %d, want 2000", got)
	}
	appendN(t, w, 2000, 10)
	got := readAll(t, w, 0)
	if len(got) != 2010 {
		t.Fatalf("replayed %d records, want 2010", len(got))
	}
	checkEntries(t, got, 1, 0)
	if n := len(w.segs); n < 3 {
		t.Fatalf("%d segments, want several", n)
	}
}

func TestIterator_StartsAtAnyLSN(t *testing.T) {
	w := mustOpen(t, testConfig(t))
	appendN(t, w, 0, 800)
	tests := []struct {
		name string
		from LSN
		want int
	}{
		{name: "first", from: 1, want: 800},
		{name: "middle of a later segment", from: 617, want: 184},
		{name: "last", from: 800, want: 1},
		{name: "one past the last", from: 801, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readAll(t, w, tt.from)
			if len(got) != tt.want {
				t.Fatalf("got %d entries, want %d", len(got), tt.want)
			}
			checkEntries(t, got, tt.from, int(tt.from)-1)
		})
	}
	if _, err := w.Iterator(802); !errors.Is(err, ErrBeyondEnd) {
		t.Fatalf("Iterator(802) err = %v, want ErrBeyondEnd", err)
	}
}

func TestAppendAsync_PipelinedFuturesResolveInOrder(t *testing.T) {
	w := mustOpen(t, testConfig(t))
	var futures []*Future
	for i := range 300 {
		f, err := w.AppendAsync(testRecord(i))
		if err != nil {
			t.Fatal(err)
		}
		futures = append(futures, f)
	}
	for i, f := range futures {
		lsn, err := f.Wait(context.Background())
		if err != nil || lsn != LSN(i+1) || f.LSN() != lsn {
			t.Fatalf("future %d = %d, %v", i, lsn, err)
		}
	}
	checkEntries(t, readAll(t, w, 1), 1, 0)
}

func TestAppend_ConcurrentWritersProduceGapFreeLog(t *testing.T) {
	w := mustOpen(t, testConfig(t))
	const writers, each = 32, 50
	var wg sync.WaitGroup
	seen := make([]bool, writers*each+1)
	var mu sync.Mutex
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				lsn, err := w.Append(context.Background(), testRecord(g*each+i))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[lsn] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for lsn := 1; lsn < len(seen); lsn++ {
		if !seen[lsn] {
			t.Fatalf("LSN %d never returned", lsn)
		}
	}
	if got := readAll(t, w, 0); len(got) != writers*each {
		t.Fatalf("replayed %d, want %d", len(got), writers*each)
	}
}

func TestAppend_RejectsInvalidRecords(t *testing.T) {
	w := mustOpen(t, testConfig(t))
	tests := []struct {
		name string
		rec  Record
	}{
		{name: "type 0", rec: Record{Type: 0}},
		{name: "state 6", rec: Record{Type: 1, State: 6}},
		{name: "negative wall time", rec: Record{Type: 1, HLC: hlc.Timestamp{WallMs: -1}}},
		{name: "payload larger than a segment", rec: Record{Type: 1, Payload: make([]byte, MinSegmentBytes)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := w.Append(context.Background(), tt.rec); !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("err = %v, want ErrInvalidRecord", err)
			}
		})
	}
	if w.LastLSN() != 0 {
		t.Fatalf("an invalid record consumed an LSN")
	}
}

func TestAppend_KeepsGivenState(t *testing.T) {
	w := mustOpen(t, testConfig(t))
	r := testRecord(0)
	r.State = Global
	if _, err := w.Append(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, w, 1)[0].State; got != Global {
		t.Fatalf("state = %s, want GLOBAL", got)
	}
}

func TestAppend_FullQueueReturnsBackpressure(t *testing.T) {
	ffs := &faultFS{}
	cfg := testConfig(t)
	cfg.FS = ffs
	cfg.QueueEntries, cfg.MaxBatchEntries = 8, 4
	w := mustOpen(t, cfg)
	release := ffs.holdSyncs()

	var futures []*Future
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		var f *Future
		if f, err = w.AppendAsync(testRecord(i)); err == nil {
			futures = append(futures, f)
		}
	}
	if !errors.Is(err, ErrBackpressure) || len(futures) != 8 {
		t.Fatalf("after %d appends err = %v, want ErrBackpressure after 8", len(futures), err)
	}
	release()
	for _, f := range futures {
		if _, err := f.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Append(context.Background(), testRecord(8)); err != nil {
		t.Fatalf("append after the queue drained: %v", err)
	}
}

func TestAppend_ContextCancelledWhileWaiting(t *testing.T) {
	ffs := &faultFS{}
	cfg := testConfig(t)
	cfg.FS = ffs
	w := mustOpen(t, cfg)
	release := ffs.holdSyncs()
	ctx, cancel := context.WithCancel(context.Background())
	f, err := w.AppendAsync(testRecord(0))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := f.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait err = %v, want context.Canceled", err)
	}
	if _, err := w.Append(ctx, testRecord(1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with a cancelled context err = %v", err)
	}
	release()
	if lsn, err := f.Wait(context.Background()); err != nil || lsn != 1 {
		t.Fatalf("Wait after release = %d, %v", lsn, err)
	}
}

func TestClose_FlushesQueuedAndRejectsLater(t *testing.T) {
	cfg := testConfig(t)
	w, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var futures []*Future
	for i := range 100 {
		f, err := w.AppendAsync(testRecord(i))
		if err != nil {
			t.Fatal(err)
		}
		futures = append(futures, f)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range futures {
		if _, err := f.Wait(context.Background()); err != nil {
			t.Fatalf("queued append failed on Close: %v", err)
		}
	}
	if _, err := w.Append(context.Background(), testRecord(0)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close err = %v, want ErrClosed", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	w2 := mustOpen(t, cfg)
	checkEntries(t, readAll(t, w2, 0), 1, 0)
}

func TestOpen_SecondOpenOfDirectoryIsLocked(t *testing.T) {
	cfg := testConfig(t)
	mustOpen(t, cfg)
	if _, err := Open(cfg); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open err = %v, want ErrLocked", err)
	}
}

func TestConfig_Validate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want bool // valid
	}{
		{name: "defaults", cfg: Config{Dir: "d"}, want: true},
		{name: "no dir", cfg: Config{}, want: false},
		{name: "tiny segment", cfg: Config{Dir: "d", SegmentBytes: 4096}, want: false},
		{name: "batch bigger than segment", cfg: Config{Dir: "d", SegmentBytes: MinSegmentBytes, MaxBatchBytes: 2 * MinSegmentBytes}, want: false},
		{name: "batch entries above queue", cfg: Config{Dir: "d", MaxBatchEntries: 10, QueueEntries: 5}, want: false},
		{name: "negative delay", cfg: Config{Dir: "d", MaxBatchDelay: -time.Second}, want: false},
		{name: "pending is not a watermark", cfg: Config{Dir: "d", Retain: []Level{Pending}}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if got := err == nil; got != tt.want {
				t.Fatalf("Validate() = %v, want valid %v", err, tt.want)
			}
		})
	}
	c := Config{Dir: "d"}
	_ = c.Validate()
	if c.SegmentBytes != DefaultSegmentBytes || c.MaxBatchEntries != 1000 || c.MaxBatchBytes != 1<<20 ||
		c.MaxBatchDelay != 500*time.Microsecond || c.QueueEntries != 65536 {
		t.Fatalf("defaults = %+v", c)
	}
}

func TestMetrics_CountEntriesAndBatches(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := testConfig(t)
	cfg.Registerer = reg
	w := mustOpen(t, cfg)
	appendN(t, w, 0, 10)
	// The writer updates the queue depth after waking a batch's waiters;
	// Close waits for it.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		m := f.GetMetric()[0]
		got[f.GetName()] = m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
	}
	want := map[string]float64{
		"strata_wal_entries_total":          10,
		"strata_wal_fsync_duration_seconds": 10, // one batch per sequential append
		"strata_wal_batch_entries":          10,
		"strata_wal_batch_bytes":            10,
		"strata_wal_queue_depth":            0,
		"strata_wal_errors_total":           0,
	}
	for name, v := range want {
		if g, ok := got[name]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", name, g, ok, v)
		}
	}
	if got["strata_wal_bytes_total"] <= 10*HeaderBytes {
		t.Errorf("strata_wal_bytes_total = %v", got["strata_wal_bytes_total"])
	}
	cfg2 := testConfig(t)
	cfg2.Registerer = reg
	if _, err := Open(cfg2); err == nil {
		t.Fatal("a second WAL registered the same metrics")
	}
}
