package commit

import (
	"bytes"
	"errors"
	"fmt"

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

// ErrNoSuchWrite is returned by WriteStatus for an LSN that holds no
// ledger batch of this node.
var ErrNoSuchWrite = errors.New("cluster: no such write")

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
// refused (with the refusal) or unknown. A pending record is answered
// from memory; a reached one is read back from the NodeWAL (a scan of its
// segment up to it). It is ErrNoSuchWrite for an LSN this node's NodeWAL
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
	p.opsMu.Lock()
	o := p.ops[lsn]
	p.opsMu.Unlock()
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
