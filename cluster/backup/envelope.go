package backup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/strata-ledger/strata/fsm"
)

// The group envelope (FORMAT.md in this package): what GET /v1/snapshot
// streams and what a backup file holds is a ledger snapshot (fsm,
// unchanged) behind a short header naming the Raft group it is of, the
// applied index (the ledger header's, repeated) and the Raft term the
// node was in when it took it. POST /v1/snapshot refuses another group's
// snapshot by this name.
//
// Why an envelope and not a new ledger header: the ledger does not know
// its group or Raft's term, and its snapshot is also what Raft keeps
// internally, where Raft's own metadata already holds index and term; an
// outer header leaves fsm, both stores and Raft's snapshots as they were.
// A file without it (written before it existed) is a bare ledger
// snapshot: readable, but restored only when the operator names its
// group.
const (
	// EnvelopeMagic starts an enveloped snapshot. Never change.
	EnvelopeMagic = "STRTGSNP"
	// EnvelopeVersion is the envelope layout version.
	EnvelopeVersion = 1
	// MaxGroupName bounds a group's name in an envelope.
	MaxGroupName = 64
	// envelopeFixed is the envelope without the group name: magic (8),
	// version (2), name length (1), index (8), term (8), CRC-32C (4).
	envelopeFixed = 8 + 2 + 1 + 8 + 8 + 4
	// MaxEnvelopeLen bounds an envelope's length.
	MaxEnvelopeLen = envelopeFixed + MaxGroupName
)

// ErrEnvelope is wrapped by every envelope decoding error.
var ErrEnvelope = errors.New("snapshot envelope")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Envelope names the group, applied index and term of the ledger
// snapshot that follows it.
type Envelope struct {
	Group string
	Index uint64
	Term  uint64
}

// CheckGroupName refuses a name an envelope cannot carry: 1 to
// MaxGroupName bytes of letters, digits, '-', '_' and '.'.
func CheckGroupName(name string) error {
	if name == "" || len(name) > MaxGroupName {
		return fmt.Errorf("%w: group name of %d bytes (1 to %d)", ErrEnvelope, len(name), MaxGroupName)
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("%w: group name %q: only letters, digits, '-', '_' and '.'", ErrEnvelope, name)
		}
	}
	return nil
}

// AppendBinary appends the envelope:
//
//	offset size field
//	0      8    magic "STRTGSNP"
//	8      2    version (little-endian), 1
//	10     1    n, the group name's length (1..64)
//	11     n    group name
//	11+n   8    applied index (little-endian), the ledger header's
//	19+n   8    Raft term (little-endian)
//	27+n   4    CRC-32C (Castagnoli) of bytes 0..26+n, little-endian
func (e Envelope) AppendBinary(b []byte) ([]byte, error) {
	if err := CheckGroupName(e.Group); err != nil {
		return b, err
	}
	at := len(b)
	b = append(b, EnvelopeMagic...)
	b = binary.LittleEndian.AppendUint16(b, EnvelopeVersion)
	b = append(b, byte(len(e.Group)))
	b = append(b, e.Group...)
	b = binary.LittleEndian.AppendUint64(b, e.Index)
	b = binary.LittleEndian.AppendUint64(b, e.Term)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[at:], castagnoli)), nil
}

// ReadEnvelope reads what starts a snapshot from r: an envelope (ok,
// and n its length in bytes) or, when r starts with a ledger snapshot's
// magic instead, nothing (not ok, n = 0, and r must be read again from
// its start). Anything else is an error wrapping ErrEnvelope.
func ReadEnvelope(r io.ReaderAt) (e Envelope, n int64, ok bool, err error) {
	var head [11]byte
	if _, err := r.ReadAt(head[:], 0); err != nil {
		return e, 0, false, fmt.Errorf("%w: not a snapshot: %v", ErrEnvelope, err)
	}
	switch string(head[:8]) {
	case fsm.SnapshotMagic:
		return e, 0, false, nil
	case EnvelopeMagic:
	default:
		return e, 0, false, fmt.Errorf("%w: not a strata snapshot (magic %q)", ErrEnvelope, head[:8])
	}
	b := make([]byte, envelopeFixed+int(head[10]))
	if _, err := r.ReadAt(b, 0); err != nil {
		return e, 0, false, fmt.Errorf("%w: truncated: %v", ErrEnvelope, err)
	}
	e, err = DecodeEnvelope(b)
	return e, int64(len(b)), err == nil, err
}

// DecodeEnvelope checks and decodes exactly one envelope: our magic, a
// known version, a valid group name, the length it names and a matching
// checksum.
func DecodeEnvelope(b []byte) (Envelope, error) {
	if len(b) < envelopeFixed+1 || string(b[:8]) != EnvelopeMagic {
		return Envelope{}, fmt.Errorf("%w: not an envelope (%d bytes)", ErrEnvelope, len(b))
	}
	if len(b) != envelopeFixed+int(b[10]) {
		return Envelope{}, fmt.Errorf("%w: %d bytes for a group name of %d", ErrEnvelope, len(b), b[10])
	}
	end := len(b) - 4
	if got, want := binary.LittleEndian.Uint32(b[end:]), crc32.Checksum(b[:end], castagnoli); got != want {
		return Envelope{}, fmt.Errorf("%w: checksum %08x, computed %08x", ErrEnvelope, got, want)
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v != EnvelopeVersion {
		return Envelope{}, fmt.Errorf("%w: version %d", ErrEnvelope, v)
	}
	n := int(b[10])
	e := Envelope{Group: string(b[11 : 11+n]), Index: binary.LittleEndian.Uint64(b[11+n:]), Term: binary.LittleEndian.Uint64(b[19+n:])}
	if err := CheckGroupName(e.Group); err != nil {
		return Envelope{}, err
	}
	return e, nil
}

// WriteEnveloped writes to w the ledger snapshot that snapshot writes,
// behind an envelope naming group and term and the applied index its
// ledger header names (the header is held back until it is read, so the
// index is the snapshot's own).
func WriteEnveloped(w io.Writer, group string, term uint64, snapshot func(io.Writer) error) error {
	if err := CheckGroupName(group); err != nil {
		return err
	}
	ew := &envelopeWriter{w: w, env: Envelope{Group: group, Term: term}}
	if err := snapshot(ew); err != nil {
		return err
	}
	if !ew.sent {
		return fmt.Errorf("%w: the snapshot ended within its header (%d bytes)", ErrEnvelope, len(ew.hdr))
	}
	return nil
}

// envelopeWriter holds back the ledger header, then writes the envelope
// and the header, then passes everything through.
type envelopeWriter struct {
	w    io.Writer
	env  Envelope
	hdr  []byte
	sent bool
}

func (ew *envelopeWriter) Write(p []byte) (int, error) {
	if ew.sent {
		return ew.w.Write(p)
	}
	take := min(fsm.SnapshotHeaderLen-len(ew.hdr), len(p))
	ew.hdr = append(ew.hdr, p[:take]...)
	if len(ew.hdr) < fsm.SnapshotHeaderLen {
		return len(p), nil
	}
	h, err := fsm.DecodeSnapshotHeader(ew.hdr)
	if err != nil {
		return 0, err
	}
	ew.env.Index = h.AppliedIndex
	b, err := ew.env.AppendBinary(nil)
	if err != nil {
		return 0, err
	}
	if _, err := ew.w.Write(append(b, ew.hdr...)); err != nil {
		return 0, err
	}
	ew.sent = true
	if _, err := ew.w.Write(p[take:]); err != nil {
		return 0, err
	}
	return len(p), nil
}
