package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/strata-ledger/strata/hlc"
)

// Record layout (wal/FORMAT.md). Never change: it is on disk.
const (
	// HeaderBytes is the length of a record header.
	HeaderBytes = 34
	// MaxPayloadBytes is the largest payload a record may carry; decoders
	// reject a larger length before allocating. It equals the largest
	// request body and Raft entry (DESIGN §7, §13).
	MaxPayloadBytes = 1 << 20
	// MaxRecordBytes is the largest encoded record.
	MaxRecordBytes = HeaderBytes + MaxPayloadBytes

	offCRC    = 0
	offLength = 4
	offLSN    = 8
	offHLC    = 16
	offState  = 32
	offType   = 33
)

// LSN is a log sequence number: 1 for the first record ever written, +1 per
// record, never reused. 0 means "none".
type LSN uint64

// Level is how far a record has travelled: the state byte of a record, and
// the name of a watermark. The numbers are on disk; never change them.
type Level uint8

// Levels in the order a record climbs them.
const (
	Pending   Level = 1 // in this node's WAL only
	Regional  Level = 2 // committed by the region's Raft group
	Global    Level = 3 // committed by the gates' Raft group
	Applied   Level = 4 // applied to the state machine
	Compacted Level = 5 // safe to delete
)

// String names the level as DESIGN §5 does.
func (l Level) String() string {
	switch l {
	case Pending:
		return "PENDING"
	case Regional:
		return "REGIONAL"
	case Global:
		return "GLOBAL"
	case Applied:
		return "APPLIED"
	case Compacted:
		return "COMPACTED"
	}
	return fmt.Sprintf("Level(%d)", uint8(l))
}

func (l Level) valid() bool { return l >= Pending && l <= Compacted }

// Record is what a caller appends: an operation of some type, stamped with
// the HLC of its origin.
type Record struct {
	// Type is the caller's record type; 0 is invalid.
	Type uint8
	// State is the level the operation had reached when it was written;
	// 0 means Pending.
	State Level
	// HLC is the hybrid logical clock of the operation's origin.
	HLC hlc.Timestamp
	// Payload is at most MaxPayloadBytes.
	Payload []byte
}

// Entry is a record read back from the log.
type Entry struct {
	LSN LSN
	Record
}

// Sentinel errors callers branch on.
var (
	// ErrCorrupt marks a record or file that fails its checks; errors.As
	// to *CorruptError gives the segment and offset.
	ErrCorrupt = errors.New("wal: corrupt")
	// ErrInvalidRecord is returned for a record that may not be written.
	ErrInvalidRecord = errors.New("wal: invalid record")
)

// CorruptError names where the first bad byte of the log is.
type CorruptError struct {
	Segment string // file name, e.g. 0000000000000001.wal
	Offset  int64  // byte offset of the bad record or field
	Reason  string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("wal: corrupt: segment %s offset %d: %s", e.Segment, e.Offset, e.Reason)
}

// Unwrap makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// crc32c is the checksum of the format: CRC-32C (Castagnoli). MakeTable
// returns the package's cached table for Castagnoli, hardware-accelerated.
func crc32c(b []byte) uint32 {
	return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))
}

// check reports why r may not be written, or nil. maxPayload is the
// smaller of MaxPayloadBytes and what fits in a segment.
func (r *Record) check(maxPayload int) error {
	switch {
	case r.Type == 0:
		return fmt.Errorf("%w: type 0", ErrInvalidRecord)
	case r.State != 0 && !r.State.valid():
		return fmt.Errorf("%w: state %d", ErrInvalidRecord, r.State)
	case r.HLC.WallMs < 0:
		return fmt.Errorf("%w: negative HLC wall time %d", ErrInvalidRecord, r.HLC.WallMs)
	case len(r.Payload) > maxPayload:
		return fmt.Errorf("%w: payload %d bytes, limit %d", ErrInvalidRecord, len(r.Payload), maxPayload)
	}
	return nil
}

// encodedLen is the length of r on disk.
func (r Record) encodedLen() int { return HeaderBytes + len(r.Payload) }

// appendRecord appends r, stamped with lsn, to dst. The caller has checked r.
func appendRecord(dst []byte, lsn LSN, r *Record) []byte {
	start := len(dst)
	if need := start + r.encodedLen(); need > cap(dst) {
		grown := make([]byte, start, max(need, 2*cap(dst)))
		copy(grown, dst)
		dst = grown
	}
	dst = dst[:start+HeaderBytes]
	h := dst[start:]
	state := r.State
	if state == 0 {
		state = Pending
	}
	binary.LittleEndian.PutUint32(h[offLength:], uint32(len(r.Payload)))
	binary.LittleEndian.PutUint64(h[offLSN:], uint64(lsn))
	r.HLC.PutBinary(h[offHLC : offHLC+hlc.EncodedLen])
	h[offState] = byte(state)
	h[offType] = r.Type
	dst = append(dst, r.Payload...)
	binary.LittleEndian.PutUint32(h[offCRC:], crc32c(dst[start+offLength:]))
	return dst
}

// header is a decoded record header.
type header struct {
	crc    uint32
	length uint32
	lsn    LSN
}

// isZero reports whether b (a header's bytes) is all zeros: the end of the
// written part of a preallocated segment.
func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// parseHeader reads the fixed fields of the header in b[:HeaderBytes] and
// checks the length against MaxPayloadBytes, before anything is allocated
// for the payload.
func parseHeader(b []byte) (header, error) {
	h := header{
		crc:    binary.LittleEndian.Uint32(b[offCRC:]),
		length: binary.LittleEndian.Uint32(b[offLength:]),
		lsn:    LSN(binary.LittleEndian.Uint64(b[offLSN:])),
	}
	if h.length > MaxPayloadBytes {
		return h, fmt.Errorf("payload length %d exceeds %d", h.length, MaxPayloadBytes)
	}
	return h, nil
}

// decodeRecord checks and decodes one whole record, b[:HeaderBytes+length].
// The payload aliases b.
func decodeRecord(h header, b []byte) (Entry, error) {
	if got := crc32c(b[offLength:]); got != h.crc {
		return Entry{}, fmt.Errorf("crc %08x, want %08x", got, h.crc)
	}
	ts, err := hlc.DecodeBinary(b[offHLC : offHLC+hlc.EncodedLen])
	if err != nil {
		return Entry{}, err
	}
	e := Entry{LSN: h.lsn, Record: Record{
		Type:    b[offType],
		State:   Level(b[offState]),
		HLC:     ts,
		Payload: b[HeaderBytes:],
	}}
	if e.Type == 0 {
		return Entry{}, errors.New("record type 0")
	}
	if !e.State.valid() {
		return Entry{}, fmt.Errorf("state %d", e.State)
	}
	return e, nil
}

// DecodeRecord decodes the record at the start of b and returns it and its
// encoded length. The payload aliases b. It never allocates more than the
// checked length allows and returns an error wrapping ErrCorrupt for
// anything that is not a whole, valid record.
func DecodeRecord(b []byte) (Entry, int, error) {
	if len(b) < HeaderBytes {
		return Entry{}, 0, fmt.Errorf("%w: %d bytes, header is %d", ErrCorrupt, len(b), HeaderBytes)
	}
	h, err := parseHeader(b)
	if err != nil {
		return Entry{}, 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	n := HeaderBytes + int(h.length)
	if len(b) < n {
		return Entry{}, 0, fmt.Errorf("%w: %d bytes, record is %d", ErrCorrupt, len(b), n)
	}
	e, err := decodeRecord(h, b[:n])
	if err != nil {
		return Entry{}, 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return e, n, nil
}

// EncodeRecord returns the on-disk form of r stamped with lsn.
func EncodeRecord(lsn LSN, r Record) ([]byte, error) {
	if err := r.check(MaxPayloadBytes); err != nil {
		return nil, err
	}
	if lsn == 0 {
		return nil, fmt.Errorf("%w: LSN 0", ErrInvalidRecord)
	}
	return appendRecord(make([]byte, 0, r.encodedLen()), lsn, &r), nil
}
