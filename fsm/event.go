package fsm

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"github.com/strata-ledger/strata/hlc"
)

// EventID is the 16 random bytes that identify an event and make applying
// it idempotent. It is rendered as 32 lowercase hex digits.
type EventID [16]byte

// IsZero reports whether id is all zero bytes (never a valid id).
func (id EventID) IsZero() bool { return id == EventID{} }

// String renders id as 32 lowercase hex digits.
func (id EventID) String() string { return hex.EncodeToString(id[:]) }

// Compare orders ids bytewise.
func (id EventID) Compare(o EventID) int { return bytes.Compare(id[:], o[:]) }

// MarshalText implements encoding.TextMarshaler (JSON: a hex string).
func (id EventID) MarshalText() ([]byte, error) {
	b := make([]byte, hex.EncodedLen(len(id)))
	hex.Encode(b, id[:])
	return b, nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (id *EventID) UnmarshalText(b []byte) error {
	p, err := ParseEventID(string(b))
	if err != nil {
		return err
	}
	*id = p
	return nil
}

// ParseEventID reads 32 hex digits.
func ParseEventID(s string) (EventID, error) {
	var id EventID
	if len(s) != hex.EncodedLen(len(id)) {
		return id, fieldErr("id", fmt.Sprintf("%d characters, want 32 hex digits", len(s)))
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, fieldErr("id", "not hex")
	}
	return id, nil
}

// Hash is a SHA-256 digest: body hashes, chain links, state digests.
type Hash [32]byte

// String renders h as 64 lowercase hex digits.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// MarshalText implements encoding.TextMarshaler (JSON: a hex string).
func (h Hash) MarshalText() ([]byte, error) {
	b := make([]byte, hex.EncodedLen(len(h)))
	hex.Encode(b, h[:])
	return b, nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (h *Hash) UnmarshalText(b []byte) error {
	if len(b) != hex.EncodedLen(len(h)) {
		return fmt.Errorf("%w: hash of %d characters, want 64", ErrMalformed, len(b))
	}
	if _, err := hex.Decode(h[:], b); err != nil {
		return fmt.Errorf("%w: hash is not hex", ErrMalformed)
	}
	return nil
}

// Event is one immutable change to the ledger (DESIGN §3). Type and Body
// agree: Body.EventType() == Type. Events are values; once handed to
// Ledger.Apply, an event and its body belong to the ledger and must not be
// changed.
type Event struct {
	ID     EventID
	Type   EventType
	JobID  string // empty only for worker events
	Tenant string // empty only for worker events
	Region string // origin region
	Node   string // origin node id
	HLC    hlc.Timestamp
	Fence  uint64
	Body   Body
}

// Key returns the event's position in canonical order.
func (e *Event) Key() EventKey { return EventKey{HLC: e.HLC, ID: e.ID} }

// EventKey is an event's position in the canonical order of a job's
// history: HLC total order, then event id. Two different events never have
// equal keys.
type EventKey struct {
	HLC hlc.Timestamp
	ID  EventID
}

// Compare returns -1, 0 or +1 as k orders before, equal to or after o.
func (k EventKey) Compare(o EventKey) int {
	if c := k.HLC.Compare(o.HLC); c != 0 {
		return c
	}
	return k.ID.Compare(o.ID)
}

// Less reports whether k orders before o.
func (k EventKey) Less(o EventKey) bool { return k.Compare(o) < 0 }

// IsZero reports whether k is the zero key, which orders before every
// event's key.
func (k EventKey) IsZero() bool { return k == EventKey{} }

// EventKeyLen is the length of AppendSortable's output.
const EventKeyLen = hlc.EncodedLen + 16

// AppendSortable appends k in a form whose bytewise order is the canonical
// order (big-endian wall, logical, node, then the id): for store keys
// such as a bbolt job-history index. Never change: stores key on it.
func (k EventKey) AppendSortable(b []byte) []byte {
	w := uint64(k.HLC.WallMs)
	b = append(b, byte(w>>56), byte(w>>48), byte(w>>40), byte(w>>32), byte(w>>24), byte(w>>16), byte(w>>8), byte(w))
	l, n := k.HLC.Logical, k.HLC.Node
	b = append(b, byte(l>>24), byte(l>>16), byte(l>>8), byte(l))
	b = append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	return append(b, k.ID[:]...)
}

// Body is the type-specific part of an event. The set of bodies is closed:
// the types of this package.
type Body interface {
	// EventType is the type of event this body belongs to.
	EventType() EventType
	encode(e *encoder)
	decode(r *reader)
	validate(v *validator)
}
