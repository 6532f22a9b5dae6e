package fsm

import "encoding/binary"

// TimeOrderedEventID lays out an event id that sorts by creation time:
// the Unix time in milliseconds as 48 bits big-endian (as UUIDv7 does),
// then the 10 bytes of random. Ids a node makes therefore increase, so a
// store that indexes events by (tenant, id) appends to the index instead
// of inserting at a random place (one dirty page per batch, not one per
// event: fsm/boltstore, BENCHMARKS.md "Ledger apply"). Uniqueness rests
// on the 80 random bits, as it did with 16 random bytes within one
// millisecond. Nothing depends on the layout: an id is still 16 opaque
// bytes, and ids sent by clients (any 16 bytes but zero) are stored as
// they are. ms is taken modulo 2⁴⁸ (year 10889); a time before 1970 is 0.
// fsm itself has no clock and no randomness: the node passes both
// (cluster/commit.NewEventID).
func TimeOrderedEventID(unixMs int64, random [10]byte) EventID {
	var id EventID
	ms := uint64(max(unixMs, 0))
	id[0], id[1] = byte(ms>>40), byte(ms>>32)
	binary.BigEndian.PutUint32(id[2:], uint32(ms))
	copy(id[6:], random[:])
	if id.IsZero() { // unix ms 0 and ten zero bytes: never a valid id
		id[15] = 1
	}
	return id
}

// EventIDTime returns the millisecond prefix of an id made by
// TimeOrderedEventID (meaningless for an id a client chose).
func EventIDTime(id EventID) int64 {
	return int64(uint64(id[0])<<40 | uint64(id[1])<<32 | uint64(binary.BigEndian.Uint32(id[2:])))
}
