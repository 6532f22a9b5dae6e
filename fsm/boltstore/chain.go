package boltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/strata-ledger/strata/fsm"
)

// Chains (FORMAT.md, "Chains"): a tenant's stored events in seq order,
// packed into blocks of consecutive seqs. A block is keyed by the chain
// key (tenant ‖ 0 ‖ seq) of its first event:
//
//	block: uvarint count ‖ count × (uvarint n ‖ stored event record of n bytes)
//
// A write transaction appends a tenant's new events to one open block and
// puts it when it holds maxBlockEvents or at flush, so a batch costs a
// few puts per tenant instead of one per event. Blocks are never extended
// by a later transaction. The chain key of an event (its logical address,
// kept by the id index and job histories) finds the block with the
// greatest first seq at or below it.
const maxBlockEvents = 64

// openBlock is a block a write transaction is filling.
type openBlock struct {
	tenant string
	first  uint64 // seq of its first event
	count  int
	recs   []byte // count × (uvarint n ‖ record)
}

// appendRecord adds a stored event to its tenant's open block, putting
// the block first if it is full; body, if not nil, is its encoded body.
func (t *tx) appendRecord(se *fsm.StoredEvent, body []byte) error {
	b := t.blocks[se.Tenant]
	if b != nil && b.count == maxBlockEvents {
		if err := t.putBlock(b); err != nil {
			return err
		}
		b = nil
	}
	if b == nil {
		b = t.newBlock(se.Tenant, se.Seq)
	}
	var err error
	if t.scratch, err = fsm.AppendStoredEventBody(t.scratch[:0], se, body); err != nil {
		return fmt.Errorf("boltstore: put event %s: %w", se.ID, err)
	}
	b.recs = appendBlockRecord(b.recs, t.scratch)
	b.count++
	return nil
}

// appendBlockRecord appends a record to a block's records.
func appendBlockRecord(recs, rec []byte) []byte {
	recs = binary.AppendUvarint(recs, uint64(len(rec)))
	return append(recs, rec...)
}

// appendBlock appends a block: its count and records.
func appendBlock(b []byte, count int, recs []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(count)), recs...)
}

func (t *tx) newBlock(tenant string, first uint64) *openBlock {
	var b *openBlock
	if n := len(t.freeBlocks); n > 0 {
		b, t.freeBlocks = t.freeBlocks[n-1], t.freeBlocks[:n-1]
	} else {
		b = &openBlock{}
	}
	b.tenant, b.first, b.count, b.recs = tenant, first, 0, b.recs[:0]
	t.blocks[tenant] = b
	return b
}

// putBlock writes an open block and closes it.
func (t *tx) putBlock(b *openBlock) error {
	k := t.ar.keep(appendChainKey(t.ar.room(len(b.tenant)+1+seqLen), b.tenant, b.first))
	v := t.ar.keep(appendBlock(t.ar.room(len(b.recs)+2), b.count, b.recs))
	delete(t.blocks, b.tenant)
	t.freeBlocks = append(t.freeBlocks, b)
	if err := t.chains.Put(k, v); err != nil {
		return fmt.Errorf("boltstore: put chain block of %q at %d: %w", b.tenant, b.first, err)
	}
	return nil
}

// flushBlocks puts every open block.
func (t *tx) flushBlocks() error {
	for _, b := range t.blocks {
		if err := t.putBlock(b); err != nil {
			return err
		}
	}
	return nil
}

// decodeBlock checks a block and returns its event count and records.
func decodeBlock(v []byte) (int, []byte, error) {
	n, k := uvarint(v)
	if k <= 0 || n == 0 || n > maxBlockEvents {
		return 0, nil, fmt.Errorf("%w: chain block count", ErrCorrupt)
	}
	recs := v[k:]
	for rest, i := recs, 0; ; i++ {
		if i == int(n) {
			if len(rest) != 0 {
				return 0, nil, fmt.Errorf("%w: %d bytes after the chain block", ErrCorrupt, len(rest))
			}
			return int(n), recs, nil
		}
		_, r, err := nextRecord(rest)
		if err != nil {
			return 0, nil, err
		}
		rest = r
	}
}

// nextRecord splits the first record off a block's records.
func nextRecord(b []byte) (rec, rest []byte, err error) {
	n, k := uvarint(b)
	if k <= 0 || n == 0 || n > fsm.MaxRecordBytes || n > uint64(len(b)-k) {
		return nil, nil, fmt.Errorf("%w: chain block record length", ErrCorrupt)
	}
	return b[k : k+int(n)], b[k+int(n):], nil
}

// blockAt finds the block holding seq of tenant: an open one, or the
// stored one with the greatest first seq at or below it. It returns the
// block's first seq and records (nil if there is none).
func (t *tx) blockAt(tenant string, seq uint64) (uint64, []byte, error) {
	if b := t.blocks[tenant]; b != nil && seq >= b.first && seq < b.first+uint64(b.count) {
		return b.first, b.recs, nil
	}
	prefix := appendChainKey(nil, tenant, 0)[:len(tenant)+1]
	k, v := seekFloor(t.chains.Cursor(), prefix, appendChainKey(nil, tenant, seq))
	if k == nil || !bytes.HasPrefix(k, prefix) || len(k) != len(prefix)+seqLen {
		return 0, nil, nil
	}
	first := binary.BigEndian.Uint64(k[len(prefix):])
	if first > seq {
		return 0, nil, nil
	}
	n, recs, err := decodeBlock(v)
	if err != nil {
		return 0, nil, fmt.Errorf("chain of %q at %d: %w", tenant, first, err)
	}
	if seq >= first+uint64(n) {
		return 0, nil, nil
	}
	return first, recs, nil
}

// recordAt returns the record of the event at a chain key.
func (t *tx) recordAt(ck []byte) ([]byte, error) {
	tenant, seq, err := parseChainKey(ck)
	if err != nil {
		return nil, err
	}
	first, recs, err := t.blockAt(tenant, seq)
	if err != nil {
		return nil, err
	}
	if recs == nil {
		return nil, fmt.Errorf("%w: no event at seq %d of %q", ErrCorrupt, seq, tenant)
	}
	var rec []byte
	for i := first; i <= seq; i++ {
		if rec, recs, err = nextRecord(recs); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

// eventAt reads the event at a chain key.
func (t *tx) eventAt(ck []byte) (*fsm.StoredEvent, error) {
	rec, err := t.recordAt(ck)
	if err != nil {
		return nil, err
	}
	se, err := fsm.DecodeStoredEvent(rec)
	if err != nil {
		return nil, fmt.Errorf("%w: event at chain key %x: %w", ErrCorrupt, ck, err)
	}
	return se, nil
}

func (t *tx) ChainEvents(tenant string, after uint64, fn func(*fsm.StoredEvent) error) error {
	if after == ^uint64(0) {
		return nil
	}
	if err := t.flushBlocks(); err != nil {
		return err
	}
	prefix := appendChainKey(nil, tenant, 0)[:len(tenant)+1]
	c := t.chains.Cursor()
	k, v := seekFloor(c, prefix, appendChainKey(nil, tenant, after+1))
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		_, seq, err := parseChainKey(k)
		if err != nil {
			return err
		}
		n, recs, err := decodeBlock(v)
		if err != nil {
			return fmt.Errorf("chain of %q at %d: %w", tenant, seq, err)
		}
		for i := 0; i < n; i, seq = i+1, seq+1 {
			var rec []byte
			rec, recs, _ = nextRecord(recs)
			if seq <= after {
				continue
			}
			se, err := fsm.DecodeStoredEvent(rec)
			if err != nil {
				return fmt.Errorf("%w: event %d of %q: %w", ErrCorrupt, seq, tenant, err)
			}
			if err := fn(se); err != nil {
				return err
			}
		}
	}
	return nil
}

// chainLast returns the seq of the tenant's last stored event (0: none),
// reading the chain's end once per transaction.
func (t *tx) chainLast(tenant string) (uint64, error) {
	if seq, ok := t.lastSeq[tenant]; ok {
		return seq, nil
	}
	var seq uint64
	prefix := appendChainKey(nil, tenant, 0)[:len(tenant)+1]
	c := t.chains.Cursor()
	c.Seek(append([]byte(tenant), 1)) // after every key of the tenant's chain
	if k, v := c.Prev(); k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+seqLen {
		n, _, err := decodeBlock(v)
		if err != nil {
			return 0, fmt.Errorf("chain of %q: %w", tenant, err)
		}
		seq = binary.BigEndian.Uint64(k[len(prefix):]) + uint64(n) - 1
	}
	t.lastSeq[tenant] = seq
	return seq, nil
}

// replaceRecord replaces the record of the event at a chain key (tests of
// tampering) by rewriting its block.
func (t *tx) replaceRecord(ck []byte, se *fsm.StoredEvent) error {
	if err := t.flushBlocks(); err != nil {
		return err
	}
	tenant, seq, err := parseChainKey(ck)
	if err != nil {
		return err
	}
	first, recs, err := t.blockAt(tenant, seq)
	if err != nil || recs == nil {
		return fmt.Errorf("boltstore: replace event %s: no chain block (%v)", se.ID, err)
	}
	rec, err := fsm.AppendStoredEvent(nil, se)
	if err != nil {
		return fmt.Errorf("boltstore: replace event %s: %w", se.ID, err)
	}
	var body []byte
	count := 0
	for s := first; len(recs) > 0; s++ {
		r, rest, err := nextRecord(recs)
		if err != nil {
			return err
		}
		if recs = rest; s == seq {
			r = rec
		}
		body = appendBlockRecord(body, r)
		count++
	}
	v := appendBlock(nil, count, body)
	if err := t.chains.Put(appendChainKey(nil, tenant, first), v); err != nil {
		return fmt.Errorf("boltstore: replace event %s: %w", se.ID, err)
	}
	return nil
}
