package bundle

import (
	"io"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

// streamEvents is the length of the streaming test's chain;
// STRATA_BUNDLE_STREAM_EVENTS overrides it (1000000 for the issue's
// 1M-event figure; the ledger then holds about 1.5 GB).
const streamEvents = 200_000

func streamLength(t *testing.T) int {
	if s := os.Getenv("STRATA_BUNDLE_STREAM_EVENTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("STRATA_BUNDLE_STREAM_EVENTS=%q", s)
		}
		return n
	}
	return streamEvents
}

// maxStreamHeapGrowthBytes bounds the heap the export and the verify add
// to the ledger's: a few buffers, never the bundle (about 79 MB here).
const maxStreamHeapGrowthBytes = 16 << 20

// TestStream_WriterToVerifyHoldsBoundedMemory exports a 200,000-event
// chain from a memstore ledger through the Writer into a pipe that Verify
// reads at the same time, sampling the live heap (after a GC) 20 times:
// it must stay within maxStreamHeapGrowthBytes of the heap before the
// export, whatever the bundle's size.
func TestStream_WriterToVerifyHoldsBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("200,000 events")
	}
	n := streamLength(t)
	st := applyAll(t, oneTenantStream(n))
	var head fsm.ChainHead
	st.View(func(tx fsm.ReadTx) error {
		head, _, _ = tx.ChainHead("acme")
		return nil
	})
	var sampling time.Duration // spent in heap(), left out of the rate
	heap := func() uint64 {
		defer func(t0 time.Time) { sampling += time.Since(t0) }(time.Now())
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := heap()
	start := time.Now()
	pr, pw := io.Pipe()
	written := make(chan error, 1)
	var bytesOut countingWriter
	go func() {
		err := st.View(func(tx fsm.ReadTx) error {
			_, err := WriteChain(io.MultiWriter(pw, &bytesOut), WriterConfig{Tenant: "acme", CreatedAt: testCreated, CreatedBy: "use1-gate1"},
				func(fn func(*fsm.StoredEvent) error) error { return tx.ChainEvents("acme", 0, fn) })
			return err
		})
		pw.CloseWithError(err)
		written <- err
	}()
	var peak uint64
	rep, err := Verify(pr, VerifyConfig{OnEntry: func(e *Entry) error {
		if e.Index%max(1, n/20) == 0 {
			peak = max(peak, heap())
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start) - sampling
	if rep.Entries != head.Seq || rep.Head != head || head.Seq < uint64(n)*9/10 {
		t.Fatalf("verified %d entries to %+v, ledger head %+v", rep.Entries, rep.Head, head)
	}
	growth := int64(peak) - int64(base)
	t.Logf("%d events, %d bundle bytes, export and verify in %v (%.0f events/s, heap sampling left out); heap before %d MiB, peak growth %.2f MiB (bound %d MiB)",
		rep.Entries, bytesOut.n, elapsed.Round(time.Millisecond), float64(rep.Entries)/elapsed.Seconds(),
		base>>20, float64(growth)/(1<<20), maxStreamHeapGrowthBytes>>20)
	if growth > maxStreamHeapGrowthBytes {
		t.Fatalf("heap grew by %d bytes", growth)
	}
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}
