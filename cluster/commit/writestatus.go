package commit

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/wal"
)

// WriteState is where a NodeWAL record stands on its way to the tier.
type WriteState uint8

// Write states.
const (
	// WritePending: in the NodeWAL (or queued for it, at NONE), still
	// climbing to the tier (after a restart, Recover re-proposes it).
	WritePending WriteState = iota + 1
	// WriteReached: at the tier.
	WriteReached
	// WriteRefused: the tier refused it for good; WriteStatus.Refusal
	// says why. Its events are not in the ledger.
	WriteRefused
	// WriteUnknown: at or below the watermark, but older than the oldest
	// refusal kept (MaxRefusals): it reached the tier or was refused, and
	// which is no longer known.
	WriteUnknown
)

var writeStateNames = [...]string{"", "pending", "reached", "refused", "unknown"}

// String returns pending, reached, refused or unknown.
func (s WriteState) String() string {
	if s >= WritePending && s <= WriteUnknown {
		return writeStateNames[s]
	}
	return fmt.Sprintf("WriteState(%d)", uint8(s))
}

// Errors of WriteStatus.
var (
	// ErrNoSuchWrite is returned for an LSN that holds no ledger batch of
	// this node.
	ErrNoSuchWrite = errors.New("cluster: no such write")
	// ErrWriteStatusBusy is returned when the record must be read back
	// from the NodeWAL while another WriteStatus is doing so: retry.
	ErrWriteStatusBusy = errors.New("cluster: write status: another NodeWAL read is in progress, retry")
)

// Bounds of the records WriteStatus answers from memory once their climb
// ended: the most recent recentWrites, holding at most recentWriteBytes
// of batches. An older record is read back from the NodeWAL, by one
// caller at a time (a scan of its segment up to it).
const (
	recentWrites     = 16_384
	recentWriteBytes = 16 << 20
)

// WriteStatus is what became of one NodeWAL record (one Submit).
type WriteStatus struct {
	LSN   wal.LSN
	State WriteState
	// Level is what holds: NONE or LOCAL while pending, the tier once
	// reached, LOCAL when refused or unknown.
	Level Durability
	// HLC is the record's.
	HLC hlc.Timestamp
	// Tenants are the distinct tenants of its events, sorted ("" for an
	// event without one); nil when they are not known (the batch did not
	// decode, or the record is no longer in the NodeWAL).
	Tenants []string
	// Events are its events' ids, in order (nil when not known).
	Events []fsm.EventID
	// Refusal is set when State is WriteRefused.
	Refusal *Refusal
}

// WriteStatus returns what became of the record at lsn: pending, reached,
// refused (with the refusal) or unknown. A record climbing, or among the
// most recent to end their climb, is answered from memory; an older one
// is read back from the NodeWAL, one caller at a time (ErrWriteStatusBusy
// for the others). It is ErrNoSuchWrite for an LSN this node's NodeWAL
// does not hold as a ledger batch.
func (p *Pipeline) WriteStatus(lsn wal.LSN) (WriteStatus, error) {
	if lsn == 0 {
		return WriteStatus{}, fmt.Errorf("%w: LSN 0", ErrNoSuchWrite)
	}
	// The order matters: a refusal is kept before its record finishes,
	// so a record seen finished and then not found refused reached.
	finished := p.marks.finished(lsn)
	if r, ok, lost := p.refusals.get(lsn); ok {
		st := WriteStatus{LSN: lsn, State: WriteRefused, Level: DurabilityLocal, HLC: r.HLC, Tenants: r.Tenants, Refusal: &r}
		for _, e := range r.Events {
			st.Events = append(st.Events, e.ID)
		}
		return st, nil
	} else if finished && lost {
		st, err := p.recordStatus(lsn)
		st.State, st.Level = WriteUnknown, DurabilityLocal
		return st, err
	}
	o := p.writes.get(lsn)
	var st WriteStatus
	if o != nil {
		st = WriteStatus{LSN: lsn, HLC: o.ts}
		if events, err := fsm.DecodeBatch(o.batch); err == nil {
			st.Tenants, st.Events = describe(events)
		}
	} else {
		var err error
		if st, err = p.recordStatus(lsn); err != nil {
			return WriteStatus{}, err
		}
	}
	switch {
	case finished:
		st.State, st.Level = WriteReached, p.cfg.Tier
	case lsn > p.cfg.WAL.LastLSN():
		st.State, st.Level = WritePending, DurabilityNone
	default:
		st.State, st.Level = WritePending, DurabilityLocal
	}
	return st, nil
}

// recordStatus reads the record at lsn back from the NodeWAL: its HLC,
// tenants and events. A record compacted away is known by its LSN alone.
func (p *Pipeline) recordStatus(lsn wal.LSN) (WriteStatus, error) {
	st := WriteStatus{LSN: lsn}
	if lsn > p.cfg.WAL.LastLSN() {
		return st, fmt.Errorf("%w: LSN %d is beyond the NodeWAL's last, %d", ErrNoSuchWrite, lsn, p.cfg.WAL.LastLSN())
	}
	select {
	case p.scan <- struct{}{}:
		defer func() { <-p.scan }()
	default:
		return st, ErrWriteStatusBusy
	}
	it, err := p.cfg.WAL.Iterator(lsn)
	if errors.Is(err, wal.ErrCompacted) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("cluster: write status: LSN %d: %w", lsn, err)
	}
	defer it.Close()
	if !it.Next() {
		if err := it.Err(); err != nil && !errors.Is(err, wal.ErrCompacted) {
			return st, fmt.Errorf("cluster: write status: LSN %d: %w", lsn, err)
		}
		return st, nil
	}
	e := it.Entry()
	if e.LSN != lsn || e.Type != WALRecordLedgerBatch {
		return st, fmt.Errorf("%w: LSN %d is not a ledger batch", ErrNoSuchWrite, lsn)
	}
	st.HLC = e.HLC
	if events, err := fsm.DecodeBatch(bytes.Clone(e.Payload)); err == nil {
		st.Tenants, st.Events = describe(events)
	}
	return st, nil
}

// describe returns the distinct tenants of events and their ids.
func describe(events []fsm.Event) ([]string, []fsm.EventID) {
	tenants, _ := tenantsOf(events)
	ids := make([]fsm.EventID, len(events))
	for i := range events {
		ids[i] = events[i].ID
	}
	return tenants, ids
}

// writeIndex holds the records climbing and the most recent ones whose
// climb ended (at most maxRecent of them, holding at most maxBytes of
// batches; the oldest go first), so that WriteStatus answers them from
// memory. Safe for concurrent use.
type writeIndex struct {
	mu                  sync.Mutex
	climbing            map[wal.LSN]*op
	recent              map[wal.LSN]*op
	order               []wal.LSN // of recent, oldest first
	bytes               int       // of recent's batches
	maxRecent, maxBytes int
}

func newWriteIndex(maxRecent, maxBytes int) *writeIndex {
	return &writeIndex{climbing: map[wal.LSN]*op{}, recent: map[wal.LSN]*op{}, maxRecent: maxRecent, maxBytes: maxBytes}
}

// start records that o climbs.
func (x *writeIndex) start(o *op) {
	x.mu.Lock()
	x.climbing[o.lsn] = o
	x.mu.Unlock()
}

// end records that o's climb ended: it moves to the recent ones.
func (x *writeIndex) end(o *op) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.climbing, o.lsn)
	if _, ok := x.recent[o.lsn]; !ok {
		x.recent[o.lsn] = o
		x.order = append(x.order, o.lsn)
		x.bytes += len(o.batch)
	}
	for len(x.order) > 0 && (len(x.recent) > x.maxRecent || x.bytes > x.maxBytes) {
		if old, ok := x.recent[x.order[0]]; ok {
			x.bytes -= len(old.batch)
			delete(x.recent, x.order[0])
		}
		x.order = x.order[1:]
	}
}

// get returns the record at lsn if it is held.
func (x *writeIndex) get(lsn wal.LSN) *op {
	x.mu.Lock()
	defer x.mu.Unlock()
	if o, ok := x.climbing[lsn]; ok {
		return o
	}
	return x.recent[lsn]
}
