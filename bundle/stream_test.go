package bundle

import (
	"io"
	"runtime"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

// streamEvents is the length of the streaming test's chain.
const streamEvents = 200_000

// maxStreamHeapGrowthBytes bounds the heap the export and the verify add
// to the ledger's: a few buffers, never the bundle (about 60 MB here).
const maxStreamHeapGrowthBytes = 16 << 20

// TestStream_WriterToVerifyHoldsBoundedMemory exports a 200,000-event
// chain from a memstore ledger through the Writer into a pipe that Verify
// reads at the same time, sampling the live heap (after a GC) every
// 10,000 entries: it must stay within maxStreamHeapGrowthBytes of the
// heap before the export, whatever the bundle's size.
func TestStream_WriterToVerifyHoldsBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("200,000 events")
	}
	st := applyAll(t, oneTenantStream(streamEvents))
	var head fsm.ChainHead
	st.View(func(tx fsm.ReadTx) error {
		head, _, _ = tx.ChainHead("acme")
		return nil
	})
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := heap()
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
		if e.Index%10_000 == 0 {
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
	if rep.Entries != head.Seq || rep.Head != head || head.Seq < streamEvents*9/10 {
		t.Fatalf("verified %d entries to %+v, ledger head %+v", rep.Entries, rep.Head, head)
	}
	growth := int64(peak) - int64(base)
	t.Logf("%d events, %d bundle bytes; heap before %d MiB, peak growth %.2f MiB (bound %d MiB)",
		rep.Entries, bytesOut.n, base>>20, float64(growth)/(1<<20), maxStreamHeapGrowthBytes>>20)
	if growth > maxStreamHeapGrowthBytes {
		t.Fatalf("heap grew by %d bytes", growth)
	}
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}
