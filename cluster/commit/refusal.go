package commit

import (
	"container/list"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/wal"
)

// A refusal is the end of a NodeWAL record the tier refused for good (the
// leader answered that the batch is invalid, or the entry is malformed):
// retrying cannot help and would hold the tier watermark back forever,
// yet its caller may have been acknowledged at NONE or LOCAL already.
// DESIGN §4 promises such a record reaches its tier or ends as a failure
// the client can read, never silently; the pipeline keeps the refusal
// (refusalLog, in the node's data dir) before the watermark passes the
// record, and Pipeline.WriteStatus answers it.
//
// This file is the pure part: the Refusal, its binary encoding and the
// bounded registry. refusal_file.go keeps the registry on disk.

// Bounds of the refusals a node keeps. Beyond either, the oldest are
// dropped (counted in strata_pipeline_refusals_evicted_total) and a write
// at or below the highest LSN dropped reads as WriteUnknown.
const (
	// MaxRefusals bounds the refusals kept.
	MaxRefusals = 10_000
	// MaxRefusalBytes bounds their encoded size (a refusal of a batch of
	// fsm.MaxBatchEvents events takes up to ~1 MiB).
	MaxRefusalBytes = 32 << 20
	// MaxRefusalReasonBytes bounds the reason kept (the tier's error
	// text), cut at a rune boundary.
	MaxRefusalReasonBytes = fsm.MaxTextBytes
)

// maxRefusalBytes bounds one encoded refusal: the fixed fields, node and
// reason, and at most fsm.MaxBatchEvents tenants and events.
const maxRefusalBytes = 1 + 8 + hlc.EncodedLen + 8 +
	2*binary.MaxVarintLen64 + fsm.MaxNameBytes + MaxRefusalReasonBytes +
	binary.MaxVarintLen64 + fsm.MaxBatchEvents*(binary.MaxVarintLen64+fsm.MaxNameBytes) +
	binary.MaxVarintLen64 + fsm.MaxBatchEvents*(len(fsm.EventID{})+binary.MaxVarintLen64)

// Refusal is a NodeWAL record the tier refused for good.
type Refusal struct {
	// Node is the node whose NodeWAL holds the record; LSN is its LSN.
	Node string
	LSN  wal.LSN
	// HLC is the record's (its batch's first event's).
	HLC hlc.Timestamp
	// At is when the pipeline gave up on it (millisecond precision).
	At time.Time
	// Reason is the tier's error text, at most MaxRefusalReasonBytes.
	Reason string
	// Tenants are the distinct tenants of its events, sorted ("" for an
	// event without one: a worker event); nil when the batch did not
	// decode (then only a token for all tenants may read it).
	Tenants []string
	// Events are the ids of its events, in batch order, each with the
	// index of its tenant in Tenants.
	Events []RefusedEvent
}

// RefusedEvent is one event of a refused record.
type RefusedEvent struct {
	ID     fsm.EventID
	Tenant int // index into Refusal.Tenants
}

// newRefusal describes the record lsn of node (batch, stamped ts) the tier
// refused at with reason.
func newRefusal(node string, lsn wal.LSN, ts hlc.Timestamp, at time.Time, batch []byte, reason string) Refusal {
	r := Refusal{Node: node, LSN: lsn, HLC: ts, At: time.UnixMilli(at.UnixMilli()), Reason: boundText(reason, MaxRefusalReasonBytes)}
	events, err := fsm.DecodeBatch(batch)
	if err != nil {
		return r
	}
	r.Tenants, r.Events = tenantsOf(events)
	return r
}

// tenantsOf returns the distinct tenants of events, sorted, and each
// event with the index of its tenant.
func tenantsOf(events []fsm.Event) ([]string, []RefusedEvent) {
	tenants := make([]string, 0, 1)
	for i := range events {
		if !slices.Contains(tenants, events[i].Tenant) {
			tenants = append(tenants, events[i].Tenant)
		}
	}
	slices.Sort(tenants)
	out := make([]RefusedEvent, len(events))
	for i := range events {
		j, _ := slices.BinarySearch(tenants, events[i].Tenant)
		out[i] = RefusedEvent{ID: events[i].ID, Tenant: j}
	}
	return tenants, out
}

// boundText cuts s to at most n bytes at a rune boundary.
func boundText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// Kinds of a refusal file entry (the first byte of its payload). On disk:
// never change or reuse them.
const (
	refusalKindRefusal byte = 1 // one Refusal
	refusalKindEvicted byte = 2 // what was evicted before: through LSN, count
)

// errRefusalCodec marks a payload that does not decode.
var errRefusalCodec = errors.New("cluster: malformed refusal")

// appendRefusal appends r's encoding (kind 1):
//
//	kind(1) lsn(8) hlc(16) at_ms(8) node(uvarint len + bytes)
//	reason(uvarint len + bytes) tenants(uvarint n, each uvarint len + bytes)
//	events(uvarint n, each id(16) + uvarint tenant index)
//
// integers little-endian. A nil Tenants is encoded as n = 0 and events
// then must be empty.
func appendRefusal(b []byte, r *Refusal) []byte {
	b = append(b, refusalKindRefusal)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.LSN))
	b = r.HLC.AppendBinary(b)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.At.UnixMilli()))
	b = appendString(b, r.Node)
	b = appendString(b, r.Reason)
	b = binary.AppendUvarint(b, uint64(len(r.Tenants)))
	for _, t := range r.Tenants {
		b = appendString(b, t)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Events)))
	for _, e := range r.Events {
		b = append(b, e.ID[:]...)
		b = binary.AppendUvarint(b, uint64(e.Tenant))
	}
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// refusalReader decodes a payload, checking every length against what is
// left and its bound before allocating.
type refusalReader struct {
	b   []byte
	err error
}

func (r *refusalReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", errRefusalCodec, fmt.Sprintf(format, args...))
	}
}

func (r *refusalReader) bytes(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.fail("%s: %d bytes, %d left", what, n, len(r.b))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *refusalReader) u64(what string) uint64 {
	b := r.bytes(8, what)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

func (r *refusalReader) uvarint(what string, limit uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || n > 1 && r.b[n-1] == 0 {
		r.fail("%s: bad or non-minimal uvarint", what)
		return 0
	}
	if v > limit {
		r.fail("%s: %d, limit %d", what, v, limit)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *refusalReader) str(what string, limit int) string {
	n := r.uvarint(what, uint64(limit))
	return string(r.bytes(int(n), what))
}

// decodeRefusal reads a kind-1 payload; it never allocates more than
// the payload's size allows.
func decodeRefusal(b []byte) (Refusal, error) {
	if len(b) == 0 || b[0] != refusalKindRefusal {
		return Refusal{}, fmt.Errorf("%w: not a refusal", errRefusalCodec)
	}
	r := refusalReader{b: b[1:]}
	var out Refusal
	out.LSN = wal.LSN(r.u64("lsn"))
	if hb := r.bytes(hlc.EncodedLen, "hlc"); hb != nil {
		ts, err := hlc.DecodeBinary(hb)
		if err != nil {
			r.fail("hlc: %v", err)
		}
		out.HLC = ts
	}
	at := r.u64("at")
	if at > 1<<62 {
		r.fail("at: %d ms", at)
	}
	out.At = time.UnixMilli(int64(at))
	out.Node = r.str("node", fsm.MaxNameBytes)
	out.Reason = r.str("reason", MaxRefusalReasonBytes)
	nt := r.uvarint("tenants", min(fsm.MaxBatchEvents, uint64(len(r.b))))
	if nt > 0 {
		out.Tenants = make([]string, 0, nt)
	}
	for i := uint64(0); i < nt && r.err == nil; i++ {
		t := r.str("tenant", fsm.MaxNameBytes)
		if i > 0 && t <= out.Tenants[i-1] {
			r.fail("tenants not sorted and distinct at %d", i)
		}
		out.Tenants = append(out.Tenants, t)
	}
	const eventBytes = len(fsm.EventID{}) + 1
	ne := r.uvarint("events", min(fsm.MaxBatchEvents, uint64(len(r.b)/eventBytes)))
	if ne > 0 {
		if nt == 0 {
			r.fail("%d events without tenants", ne)
		}
		out.Events = make([]RefusedEvent, 0, ne)
	}
	for i := uint64(0); i < ne && r.err == nil; i++ {
		var e RefusedEvent
		copy(e.ID[:], r.bytes(len(e.ID), "event id"))
		e.Tenant = int(r.uvarint("event tenant", max(nt, 1)-1))
		out.Events = append(out.Events, e)
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d trailing bytes", len(r.b))
	}
	if r.err != nil {
		return Refusal{}, r.err
	}
	return out, nil
}

// appendEvicted appends a kind-2 entry: every refusal up to LSN through
// was evicted, count of them in all.
func appendEvicted(b []byte, through wal.LSN, count uint64) []byte {
	b = append(b, refusalKindEvicted)
	b = binary.LittleEndian.AppendUint64(b, uint64(through))
	return binary.LittleEndian.AppendUint64(b, count)
}

func decodeEvicted(b []byte) (wal.LSN, uint64, error) {
	if len(b) != 17 || b[0] != refusalKindEvicted {
		return 0, 0, fmt.Errorf("%w: eviction mark of %d bytes", errRefusalCodec, len(b))
	}
	return wal.LSN(binary.LittleEndian.Uint64(b[1:9])), binary.LittleEndian.Uint64(b[9:]), nil
}

// refusalRegistry keeps the newest refusals by LSN, at most maxCount of
// them and maxBytes of their encodings, evicting the oldest added first.
// It remembers the highest LSN it evicted, so that a write at or below
// it that it does not hold reads as unknown rather than reached. Pure,
// not safe for concurrent use.
type refusalRegistry struct {
	maxCount, maxBytes int
	byLSN              map[wal.LSN]*list.Element // of *keptRefusal
	order              *list.List                // oldest first
	bytes              int
	evicted            uint64  // how many were evicted, ever
	evictedThrough     wal.LSN // highest LSN evicted
}

type keptRefusal struct {
	r       Refusal
	encoded []byte // appendRefusal(nil, &r)
}

func newRefusalRegistry(maxCount, maxBytes int) *refusalRegistry {
	return &refusalRegistry{maxCount: maxCount, maxBytes: maxBytes, byLSN: map[wal.LSN]*list.Element{}, order: list.New()}
}

// add keeps r (replacing one of the same LSN) and returns how many of the
// oldest it evicted to stay within bounds.
func (g *refusalRegistry) add(r Refusal, encoded []byte) int {
	if el, ok := g.byLSN[r.LSN]; ok {
		g.bytes -= len(el.Value.(*keptRefusal).encoded)
		g.order.Remove(el)
	}
	g.byLSN[r.LSN] = g.order.PushBack(&keptRefusal{r: r, encoded: encoded})
	g.bytes += len(encoded)
	n := 0
	for g.order.Len() > 1 && (g.order.Len() > g.maxCount || g.bytes > g.maxBytes) {
		k := g.order.Remove(g.order.Front()).(*keptRefusal)
		delete(g.byLSN, k.r.LSN)
		g.bytes -= len(k.encoded)
		g.evicted++
		g.evictedThrough = max(g.evictedThrough, k.r.LSN)
		n++
	}
	return n
}

// markEvicted records an eviction read back from disk.
func (g *refusalRegistry) markEvicted(through wal.LSN, count uint64) {
	g.evictedThrough = max(g.evictedThrough, through)
	g.evicted = max(g.evicted, count)
}

// get returns the refusal of lsn, if kept.
func (g *refusalRegistry) get(lsn wal.LSN) (Refusal, bool) {
	el, ok := g.byLSN[lsn]
	if !ok {
		return Refusal{}, false
	}
	return el.Value.(*keptRefusal).r, true
}

// lost reports whether a refusal of lsn may have been evicted.
func (g *refusalRegistry) lost(lsn wal.LSN) bool { return lsn <= g.evictedThrough }

// len is how many refusals are kept.
func (g *refusalRegistry) len() int { return g.order.Len() }

// each calls f with every kept refusal's encoding, oldest first.
func (g *refusalRegistry) each(f func(encoded []byte)) {
	for el := g.order.Front(); el != nil; el = el.Next() {
		f(el.Value.(*keptRefusal).encoded)
	}
}
