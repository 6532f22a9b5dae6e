package group

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/strata-ledger/strata/fsm"
)

// Raft entry envelope, version 1: what the proposer packs into one Raft
// entry, so that several client batches share one entry without their
// events being decoded or encoded again.
//
//	version  1 byte, EntryVersion
//	count    uvarint, 1..MaxEntryBatches
//	batches  count × (uvarint length ≥ 1, fsm batch bytes)
//
// Every uvarint is minimal and nothing may follow the last batch, so an
// accepted entry is exactly the encoding of what it decodes to. The batches
// are opaque here: the FSM decodes each with fsm.DecodeBatch. The entry
// bytes are in Raft logs and snapshots of every replica: never change the
// meaning of a version; a new layout gets a new version.
const (
	// EntryVersion is the first byte of a Raft entry.
	EntryVersion = 1
	// MaxEntryBatches bounds the client batches of one entry.
	MaxEntryBatches = 4096
	// MaxEntryEvents bounds the events of one entry, that is of one ledger
	// transaction; a single batch (≤ fsm.MaxBatchEvents) always fits.
	MaxEntryEvents = fsm.MaxBatchEvents
	// MaxEntryBytes bounds one encoded entry: a batch of fsm.MaxBatchBytes
	// (1 MiB, DESIGN §7) and its envelope always fit.
	MaxEntryBytes = fsm.MaxBatchBytes + entryOverheadBytes

	// entryOverheadBytes is the envelope of a single batch: version, count
	// and length uvarints (a length ≤ 1 MiB takes 3 bytes), rounded up.
	entryOverheadBytes = 16
	// minEntryBatchBytes is the smallest batch inside an entry: a one-byte
	// length and one byte of batch.
	minEntryBatchBytes = 2
)

// Errors of the entry and batch codecs.
var (
	// ErrBadEntry marks a Raft entry that does not decode. Every replica
	// rejects the same bytes the same way.
	ErrBadEntry = errors.New("cluster: malformed raft entry")
	// ErrInvalidBatch marks a client batch that may not be proposed: empty,
	// over a limit, or not an fsm batch. Nothing was written.
	ErrInvalidBatch = errors.New("cluster: invalid batch")
)

// EntryMark is the version byte of a checkpoint mark: an entry of this
// one byte and nothing else (FORMAT.md, "Checkpoint mark"). Every replica
// meets it at the same index and records there what anti-entropy
// compares (fsm.Ledger.Mark). Code that predates it refuses the byte as
// an unknown version, which records the index as applied and changes
// nothing: the same effect, less the checkpoint.
const EntryMark = 0x02

// markEntry is the whole of a checkpoint mark entry.
var markEntry = []byte{EntryMark}

// IsMark reports whether an entry is a checkpoint mark.
func IsMark(data []byte) bool { return len(data) == 1 && data[0] == EntryMark }

// UvarintLen is the length of the minimal uvarint encoding of v.
func UvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// AppendEntry appends the envelope of batches to dst. The caller has
// checked the limits (1..MaxEntryBatches batches, each non-empty).
func AppendEntry(dst []byte, batches [][]byte) []byte {
	dst = append(dst, EntryVersion)
	dst = binary.AppendUvarint(dst, uint64(len(batches)))
	for _, b := range batches {
		dst = binary.AppendUvarint(dst, uint64(len(b)))
		dst = append(dst, b...)
	}
	return dst
}

// EncodedEntryLen is the length AppendEntry produces for batches.
func EncodedEntryLen(batches [][]byte) int {
	n := 1 + UvarintLen(uint64(len(batches)))
	for _, b := range batches {
		n += UvarintLen(uint64(len(b))) + len(b)
	}
	return n
}

// DecodeEntry splits an entry into its batches, which alias data. The
// count is checked against MaxEntryBatches and against what the input can
// hold before the result is allocated.
func DecodeEntry(data []byte) ([][]byte, error) {
	if len(data) > MaxEntryBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrBadEntry, len(data), MaxEntryBytes)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrBadEntry)
	}
	if data[0] != EntryVersion {
		return nil, fmt.Errorf("%w: version %d", ErrBadEntry, data[0])
	}
	off := 1
	count, err := readUvarint(data, &off, "batch count")
	if err != nil {
		return nil, err
	}
	if count == 0 || count > MaxEntryBatches || count > uint64((len(data)-off)/minEntryBatchBytes) {
		return nil, fmt.Errorf("%w: batch count %d (limit %d, %d bytes left)", ErrBadEntry, count, MaxEntryBatches, len(data)-off)
	}
	batches := make([][]byte, count)
	for i := range batches {
		n, err := readUvarint(data, &off, "batch length")
		if err != nil {
			return nil, err
		}
		if n == 0 || n > uint64(len(data)-off) {
			return nil, fmt.Errorf("%w: batch %d: length %d, %d bytes left", ErrBadEntry, i, n, len(data)-off)
		}
		batches[i] = data[off : off+int(n) : off+int(n)]
		off += int(n)
	}
	if off != len(data) {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrBadEntry, len(data)-off)
	}
	return batches, nil
}

// readUvarint reads a minimal uvarint at *off and advances it.
func readUvarint(data []byte, off *int, what string) (uint64, error) {
	v, n := binary.Uvarint(data[*off:])
	if n <= 0 || n != UvarintLen(v) {
		return 0, fmt.Errorf("%w: %s: bad uvarint at offset %d", ErrBadEntry, what, *off)
	}
	*off += n
	return v, nil
}

// batchEventCount checks the header of an encoded fsm batch (version byte,
// event count within fsm.MaxBatchEvents, size within fsm.MaxBatchBytes)
// and returns its event count, without decoding the events: the proposer
// bounds entries by it, and the FSM decodes the events anyway.
func batchEventCount(b []byte) (int, error) {
	switch {
	case len(b) < 2:
		return 0, fmt.Errorf("%w: %d bytes", ErrInvalidBatch, len(b))
	case len(b) > fsm.MaxBatchBytes:
		return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidBatch, len(b), fsm.MaxBatchBytes)
	case b[0] != fsm.BatchVersion:
		return 0, fmt.Errorf("%w: batch version %d", ErrInvalidBatch, b[0])
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 || n == 0 || n > fsm.MaxBatchEvents {
		return 0, fmt.Errorf("%w: event count %d (limit %d)", ErrInvalidBatch, n, fsm.MaxBatchEvents)
	}
	return int(n), nil
}
