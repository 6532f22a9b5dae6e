// Package hlc implements hybrid logical clocks (Kulkarni et al., "Logical
// Physical Clocks and Consistent Snapshots in Globally Distributed
// Databases", 2014) for ordering every Strata event.
//
// A Timestamp is (wall_ms, logical, node). Timestamps are totally ordered by
// wall_ms, then logical, then node: two different nodes never produce equal
// timestamps, so the order is total across the cluster.
//
// Invariants kept by Clock:
//   - Now and Update return strictly increasing timestamps (per clock), even
//     under concurrent callers and when the physical clock steps back.
//   - A timestamp returned by Update is greater than the remote timestamp it
//     was given.
//   - A wall time is handed out only if it is at or below the upper bound last
//     stored through the Persister, so a restarted clock resumes above every
//     timestamp the previous incarnation handed out.
//
// HAZARD: if a remote clock runs more than MaxOffset ahead of ours, Update
// rejects its timestamps (ErrClockSkew) instead of dragging our clock forward;
// messages from that node are refused until the clocks are fixed. If the wall
// clock of this node runs more than MaxOffset ahead of its peers, they will
// refuse ours.
//
// The package is pure: no goroutines, no I/O, no reads of the system clock.
// Physical time and persistence are passed in.
package hlc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// EncodedLen is the length of the binary form of a Timestamp. Never change:
// it is part of the NodeWAL record header and the ledger's log encoding.
const EncodedLen = 16

// maxStringLen bounds the input Parse accepts: three uint64-sized decimals
// and two separators.
const maxStringLen = 20 + 1 + 10 + 1 + 10

// ErrInvalid is returned for a timestamp that cannot be parsed or decoded.
var ErrInvalid = errors.New("hlc: invalid timestamp")

// Timestamp is a hybrid logical clock reading. The zero value is the
// smallest timestamp and means "no timestamp".
type Timestamp struct {
	// WallMs is physical time in milliseconds since the Unix epoch, never
	// negative.
	WallMs int64
	// Logical orders events within the same WallMs.
	Logical uint32
	// Node is the ordinal of the node that produced the timestamp; it
	// breaks ties so the order is total.
	Node uint32
}

// Compare returns -1, 0 or +1 as t is before, equal to or after u in the
// total order (wall, logical, node).
func (t Timestamp) Compare(u Timestamp) int {
	switch {
	case t.WallMs != u.WallMs:
		return cmp(t.WallMs < u.WallMs)
	case t.Logical != u.Logical:
		return cmp(t.Logical < u.Logical)
	case t.Node != u.Node:
		return cmp(t.Node < u.Node)
	}
	return 0
}

func cmp(less bool) int {
	if less {
		return -1
	}
	return 1
}

// Less reports whether t orders before u.
func (t Timestamp) Less(u Timestamp) bool { return t.Compare(u) < 0 }

// IsZero reports whether t is the zero timestamp.
func (t Timestamp) IsZero() bool { return t == Timestamp{} }

// String renders t as "{wall_ms}:{logical}:{node}".
func (t Timestamp) String() string {
	b := make([]byte, 0, maxStringLen)
	return string(t.AppendText(b))
}

// AppendText appends the string form of t to b.
func (t Timestamp) AppendText(b []byte) []byte {
	b = strconv.AppendInt(b, t.WallMs, 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(t.Logical), 10)
	b = append(b, ':')
	return strconv.AppendUint(b, uint64(t.Node), 10)
}

// MarshalText implements encoding.TextMarshaler (used by JSON).
func (t Timestamp) MarshalText() ([]byte, error) { return t.AppendText(nil), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (t *Timestamp) UnmarshalText(b []byte) error {
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	*t = p
	return nil
}

// Parse reads the string form "{wall_ms}:{logical}:{node}".
func Parse(s string) (Timestamp, error) {
	if len(s) > maxStringLen {
		return Timestamp{}, fmt.Errorf("%w: %d bytes, want at most %d", ErrInvalid, len(s), maxStringLen)
	}
	wall, rest, ok1 := strings.Cut(s, ":")
	logical, node, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 {
		return Timestamp{}, fmt.Errorf("%w: %q is not wall:logical:node", ErrInvalid, s)
	}
	w, err := parseDecimal(wall, 63)
	if err != nil {
		return Timestamp{}, fmt.Errorf("%w: wall %q", ErrInvalid, wall)
	}
	l, err := parseDecimal(logical, 32)
	if err != nil {
		return Timestamp{}, fmt.Errorf("%w: logical %q", ErrInvalid, logical)
	}
	n, err := parseDecimal(node, 32)
	if err != nil {
		return Timestamp{}, fmt.Errorf("%w: node %q", ErrInvalid, node)
	}
	return Timestamp{WallMs: int64(w), Logical: uint32(l), Node: uint32(n)}, nil
}

// parseDecimal accepts only plain ASCII digits (no sign, no spaces), so that
// String(Parse(s)) == s for every accepted s without leading zeros.
func parseDecimal(s string, bits int) (uint64, error) {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, ErrInvalid
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, ErrInvalid
		}
	}
	return strconv.ParseUint(s, 10, bits)
}

// AppendBinary appends the 16-byte little-endian form of t: wall ms (8),
// logical (4), node (4). Never change: it is on disk.
func (t Timestamp) AppendBinary(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(t.WallMs))
	b = binary.LittleEndian.AppendUint32(b, t.Logical)
	return binary.LittleEndian.AppendUint32(b, t.Node)
}

// PutBinary writes the binary form of t into b[:EncodedLen].
func (t Timestamp) PutBinary(b []byte) {
	_ = b[EncodedLen-1]
	binary.LittleEndian.PutUint64(b[0:8], uint64(t.WallMs))
	binary.LittleEndian.PutUint32(b[8:12], t.Logical)
	binary.LittleEndian.PutUint32(b[12:16], t.Node)
}

// DecodeBinary reads a Timestamp from the first EncodedLen bytes of b.
func DecodeBinary(b []byte) (Timestamp, error) {
	if len(b) < EncodedLen {
		return Timestamp{}, fmt.Errorf("%w: %d bytes, want %d", ErrInvalid, len(b), EncodedLen)
	}
	w := binary.LittleEndian.Uint64(b[0:8])
	if w > 1<<63-1 {
		return Timestamp{}, fmt.Errorf("%w: wall %d overflows int64", ErrInvalid, w)
	}
	return Timestamp{
		WallMs:  int64(w),
		Logical: binary.LittleEndian.Uint32(b[8:12]),
		Node:    binary.LittleEndian.Uint32(b[12:16]),
	}, nil
}
