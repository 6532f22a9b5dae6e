package progress

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Staged aggregates: how a manager keeps what it folded durable between
// two commits of its aggregates to the regional ledger (FORMAT.md,
// "Staged records"). Every few milliseconds the manager writes the
// aggregates that changed to its NodeWAL as one staged record (LOCAL),
// and every 500 ms it commits them as ledger events; after a crash the
// staged records not yet covered by a commit are decoded and folded
// again. Ids are long and repeat, counters are short: a record names
// each (worker, workflow) pair once per epoch (the span between two
// commits) and refers to it by index afterwards.

// Limits of staged records.
const (
	// StageVersion is the staged record format this package writes (wire).
	StageVersion = 1
	// MaxStageKeys bounds the (worker, workflow) pairs of one epoch; the
	// encoder starts a new epoch before it would pass it.
	MaxStageKeys = 1 << 20
	// minStageKeyBytes and minStageEntryBytes are the smallest encodings
	// of a new key (two lengths, one byte each) and of an entry (four
	// uvarints): counts are checked against the bytes left before any
	// allocation.
	minStageKeyBytes   = 4
	minStageEntryBytes = 4
)

// ErrStage is a staged record the decoder refuses.
var ErrStage = errors.New("progress: bad staged record")

type stageKey struct{ worker, workflow string }

// StageEncoder writes staged records. Not safe for concurrent use.
type StageEncoder struct {
	epoch uint64
	dict  map[stageKey]uint64
	fresh []stageKey
	idx   []uint64
}

// NewStageEncoder returns an encoder whose first epoch is epoch (a
// manager starts from a random or clock-derived value, so that epochs of
// two runs never meet in one NodeWAL).
func NewStageEncoder(epoch uint64) *StageEncoder {
	return &StageEncoder{epoch: epoch, dict: make(map[stageKey]uint64)}
}

// NewEpoch starts a new epoch: the keys are named again.
func (e *StageEncoder) NewEpoch() {
	e.epoch++
	clear(e.dict)
}

// Epoch is the current epoch.
func (e *StageEncoder) Epoch() uint64 { return e.epoch }

// Append appends the staged record of ps to dst. Each Progress must
// carry a Worker and Workflow within MaxWorkerBytes / MaxWorkflowBytes;
// the histogram is not kept (stats are not durable).
func (e *StageEncoder) Append(dst []byte, ps []Progress) ([]byte, error) {
	if len(e.dict)+len(ps) > MaxStageKeys {
		e.NewEpoch()
	}
	e.fresh, e.idx = e.fresh[:0], e.idx[:0]
	for i := range ps {
		p := &ps[i]
		if len(p.Worker) == 0 || len(p.Worker) > MaxWorkerBytes || len(p.Workflow) == 0 || len(p.Workflow) > MaxWorkflowBytes {
			return dst, fmt.Errorf("%w: worker %q, workflow %q", ErrInvalid, p.Worker, p.Workflow)
		}
		k := stageKey{p.Worker, p.Workflow}
		ix, ok := e.dict[k]
		if !ok {
			ix = uint64(len(e.dict))
			e.dict[k] = ix
			e.fresh = append(e.fresh, k)
		}
		e.idx = append(e.idx, ix)
	}
	dst = append(dst, StageVersion)
	dst = binary.AppendUvarint(dst, e.epoch)
	dst = binary.AppendUvarint(dst, uint64(len(e.fresh)))
	for _, k := range e.fresh {
		dst = binary.AppendUvarint(dst, uint64(len(k.worker)))
		dst = append(dst, k.worker...)
		dst = binary.AppendUvarint(dst, uint64(len(k.workflow)))
		dst = append(dst, k.workflow...)
	}
	dst = binary.AppendUvarint(dst, uint64(len(ps)))
	for i := range ps {
		dst = binary.AppendUvarint(dst, e.idx[i])
		dst = binary.AppendUvarint(dst, ps[i].Fence)
		dst = binary.AppendUvarint(dst, ps[i].Completed)
		dst = binary.AppendUvarint(dst, ps[i].Failed)
	}
	return dst, nil
}

// StageDecoder reads staged records in NodeWAL order. Not safe for
// concurrent use.
type StageDecoder struct {
	epoch   uint64
	started bool
	keys    []stageKey
}

// Decode reads one staged record and calls fn with each of its
// aggregates (Histogram nil). A record of another epoch than the last
// one starts that epoch's keys afresh. Everything is checked before fn
// is first called: a refused record yields nothing.
func (d *StageDecoder) Decode(rec []byte, fn func(Progress)) error {
	r := stageReader{b: rec}
	if v := r.byte(); v != StageVersion {
		return fmt.Errorf("%w: version %d, want %d", ErrStage, v, StageVersion)
	}
	epoch := r.uvarint()
	nKeys := r.count(minStageKeyBytes)
	if r.err != nil {
		return r.err
	}
	keys := d.keys
	if !d.started || epoch != d.epoch {
		keys = nil
	}
	if uint64(len(keys))+nKeys > MaxStageKeys {
		return fmt.Errorf("%w: %d keys in epoch %d, limit %d", ErrStage, uint64(len(keys))+nKeys, epoch, MaxStageKeys)
	}
	base := len(keys)
	keys = keys[:base:base] // appends never touch the decoder's keys until the record is good
	for range nKeys {
		w := r.str(MaxWorkerBytes)
		wf := r.str(MaxWorkflowBytes)
		if r.err != nil {
			return r.err
		}
		keys = append(keys, stageKey{w, wf})
	}
	nEntries := r.count(minStageEntryBytes)
	start := r.off
	for range nEntries {
		if ix := r.uvarint(); r.err == nil && ix >= uint64(len(keys)) {
			return fmt.Errorf("%w: key index %d of %d", ErrStage, ix, len(keys))
		}
		r.uvarint()
		r.uvarint()
		r.uvarint()
	}
	if r.err != nil {
		return r.err
	}
	if r.off != len(rec) {
		return fmt.Errorf("%w: %d bytes after the entries", ErrStage, len(rec)-r.off)
	}
	d.epoch, d.started, d.keys = epoch, true, keys
	r.off = start
	for range nEntries {
		k := keys[r.uvarint()]
		fn(Progress{Worker: k.worker, Workflow: k.workflow, Fence: r.uvarint(), Completed: r.uvarint(), Failed: r.uvarint()})
	}
	return nil
}

// stageReader reads a staged record; the first error sticks.
type stageReader struct {
	b   []byte
	off int
	err error
}

func (r *stageReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at byte %d", ErrStage, what, r.off)
	}
}

func (r *stageReader) byte() byte {
	if r.err != nil || r.off >= len(r.b) {
		r.fail("truncated")
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

func (r *stageReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail("bad uvarint")
		return 0
	}
	r.off += n
	return v
}

// count reads a count of items of at least min bytes each, refused when
// the bytes left cannot hold them.
func (r *stageReader) count(min int) uint64 {
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)-r.off)/uint64(min) {
		r.fail(fmt.Sprintf("count %d over the %d bytes left", n, len(r.b)-r.off))
		return 0
	}
	return n
}

func (r *stageReader) str(limit int) string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n == 0 || n > uint64(limit) || n > uint64(len(r.b)-r.off) {
		r.fail(fmt.Sprintf("string of %d bytes (limit %d)", n, limit))
		return ""
	}
	s := string(r.b[r.off : r.off+int(n)])
	r.off += int(n)
	return s
}
