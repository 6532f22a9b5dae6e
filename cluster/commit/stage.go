package commit

import (
	"context"
	"errors"
	"fmt"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/wal"
)

// Staged records: durable at LOCAL, never proposed. A writer that
// coalesces (the progress data plane: cumulative counters that change a
// thousand times a second) stages what it holds every few milliseconds
// and commits it as ledger events far less often; a staged record holds
// the tier watermark until the writer Releases it — once a ledger
// record that carries its content is in the NodeWAL — so the NodeWAL
// keeps it until then, and Recover hands it back (OnStaged) after a
// crash.

// WALRecordStaged is the NodeWAL record type of a staged record; the
// payload is its writer's (transport/progress, "Staged records"). It is
// on disk: never change or reuse it.
const WALRecordStaged uint8 = 2

// Stage appends payload as a staged record and returns its LSN once it is
// fsynced (LOCAL). The record holds the tier watermark until Release.
// Errors are Submit's before its append: nothing was written.
func (p *Pipeline) Stage(ctx context.Context, payload []byte, ts hlc.Timestamp) (wal.LSN, error) {
	if len(payload) == 0 {
		return 0, fmt.Errorf("%w: empty staged record", group.ErrInvalidBatch)
	}
	if span := p.marks.span(); span >= uint64(p.cfg.MaxWindow) {
		p.m.rejected.WithLabelValues("backpressure").Inc()
		return 0, fmt.Errorf("%w: %d LSNs above the %s watermark", group.ErrBackpressure, span, p.level)
	}
	p.closeMu.RLock()
	if p.closed {
		p.closeMu.RUnlock()
		return 0, group.ErrClosed
	}
	fut, err := p.cfg.WAL.AppendAsync(wal.Record{Type: WALRecordStaged, HLC: ts, Payload: payload})
	if err == nil {
		p.marks.add(fut.LSN())
	}
	p.closeMu.RUnlock()
	if err != nil {
		if errors.Is(err, wal.ErrBackpressure) {
			p.m.rejected.WithLabelValues("backpressure").Inc()
			return 0, fmt.Errorf("%w: %w", group.ErrBackpressure, err)
		}
		p.walFailed(err)
		return 0, fmt.Errorf("cluster: stage: NodeWAL append: %w", err)
	}
	if _, err := fut.Wait(ctx); err != nil {
		// Not fsynced in time, or the NodeWAL failed: the record may
		// still land; it is held until released like any other.
		return fut.LSN(), fmt.Errorf("cluster: stage: NodeWAL LSN %d: %w", fut.LSN(), err)
	}
	return fut.LSN(), nil
}

// Release lets the watermark pass staged records: their content is now
// carried by ledger records in the NodeWAL (or no longer needed).
func (p *Pipeline) Release(lsns []wal.LSN) {
	for _, lsn := range lsns {
		p.reached(lsn)
	}
}
