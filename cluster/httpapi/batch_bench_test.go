package httpapi

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// benchBodyBytes is the binary body size the load tool sends by default.
const benchBodyBytes = 200

// batchShape builds request bodies shaped like test/bench's appendEvent:
// the same field order, the same fixed values, padding that brings each
// event's binary body to about benchBodyBytes.
type batchShape struct {
	typ   fsm.EventType // TypeWorkflowDispatched or TypeJobCreated
	jobID string
	pad   string
	name  string
}

func newBatchShape(tb testing.TB, typ fsm.EventType) *batchShape {
	s := &batchShape{typ: typ, jobID: fsm.JobID{Region: "use1", UnixMs: 1_700_000_000_000, Gate: "b0badcafec0", Seq: 1}.String()}
	for pad := 0; ; pad++ {
		s.pad = strings.Repeat("x", pad)
		s.name = "bench" + strings.Repeat("w", min(pad, fsm.MaxNameBytes-len("bench")))
		var e fsm.Event
		if err := e.UnmarshalJSON(s.appendEvent(nil, 0)); err != nil {
			tb.Fatal(err)
		}
		b, err := fsm.AppendBody(nil, e.Body)
		if err != nil {
			tb.Fatal(err)
		}
		if len(b) >= benchBodyBytes {
			return s
		}
	}
}

// request returns {"events":[...]} of n events.
func (s *batchShape) request(n int) []byte {
	b := []byte(`{"events":[`)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = s.appendEvent(b, uint64(i))
	}
	return append(b, "]}"...)
}

func (s *batchShape) appendEvent(b []byte, seq uint64) []byte {
	var id fsm.EventID
	binary.BigEndian.PutUint64(id[8:], seq+1)
	b = append(b, `{"id":"`...)
	b = hex.AppendEncode(b, id[:])
	jobID := s.jobID
	if s.typ == fsm.TypeJobCreated {
		jobID = fsm.JobID{Region: "use1", UnixMs: 1_700_000_000_000, Gate: "b0badcafec0", Seq: uint32(seq%fsm.MaxJobSeq) + 1}.String()
	}
	b = append(b, `","type":"`+s.typ.String()+`","job_id":"`...)
	b = append(b, jobID...)
	b = append(b, `","tenant":"bench","region":"use1","node":"bench","hlc":"`...)
	b = hlc.Timestamp{WallMs: 1_700_000_000_000, Logical: uint32(seq), Node: 1}.AppendText(b)
	if s.typ == fsm.TypeWorkflowDispatched {
		b = append(b, `","fence":0,"body":{"workflow":"`...)
		b = append(b, fsm.WorkflowID(jobID, "use1", s.name, uint32(seq))...)
		b = append(b, `","name":"`...)
		b = append(b, s.name...)
		b = append(b, `","instance":`...)
		b = strconv.AppendUint(b, uint64(uint32(seq)), 10)
		b = append(b, `,"spec":{"name":"`...)
		b = append(b, s.name...)
		return append(b, `","count":1,"duration":"1m","rate":0,"failure_ratio":0}}}`...)
	}
	b = append(b, `","fence":1,"body":{"spec":{"tenant":"bench","idempotency_key":"`...)
	b = fmt.Appendf(b, "%08x-%08x-%016x", 0xbad, 0, seq)
	b = append(b, s.pad...)
	return append(b, `","regions":["use1"],"timeout":"1h","workflows":[{"name":"bench","count":1,"duration":"1m","rate":0,"failure_ratio":0}]},"assigned_regions":["use1"]}}`...)
}

// BenchmarkDecodeBatchRequest measures decoding POST /v1/events:batch
// bodies of the load tool's two event shapes: before (encoding/json three
// times over every event, api_batch_ref_test.go) and new (one pass).
func BenchmarkDecodeBatchRequest(b *testing.B) {
	decoders := []struct {
		name   string
		decode func([]byte) (int, error)
	}{
		{"before", func(body []byte) (int, error) { r, err := decodeBatchReference(body); return len(r), err }},
		{"new", func(body []byte) (int, error) { r, err := decodeBatchRequest(body); return len(r.Events), err }},
	}
	for _, typ := range []fsm.EventType{fsm.TypeWorkflowDispatched, fsm.TypeJobCreated} {
		shape := newBatchShape(b, typ)
		for _, n := range []int{1, 1000} {
			body := shape.request(n)
			for _, d := range decoders {
				b.Run(fmt.Sprintf("%s/events=%d/%s", typ, n, d.name), func(b *testing.B) {
					b.ReportAllocs()
					b.SetBytes(int64(len(body)))
					for b.Loop() {
						if got, err := d.decode(body); err != nil || got != n {
							b.Fatalf("decoded %d events: %v", got, err)
						}
					}
				})
			}
		}
	}
}
