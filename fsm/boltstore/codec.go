package boltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/strata-ledger/strata/fsm"
)

// Values this package defines (the records of fsm are the rest; FORMAT.md
// has the layouts):
//
//	history entry: sortable key (32) ‖ uvarint n ‖ chain key (n bytes)
//	job value:     version (1) ‖ flags (1) ‖ [uvarint n ‖ job state record]
//	               ‖ [sealed max (32)] ‖ uvarint count ‖ count entries
//	chunk:         uvarint count ‖ count entries
//
// Entries of a value are in strictly increasing key order; a job value's
// tail entries all order after its sealed max. Decoders check every
// length against the input and the limits below before using it, and
// accept only what the encoders write.
const (
	jobValueVersion = 1

	flagState  = 1 << 0
	flagSealed = 1 << 1

	// maxEntries bounds the entries of a tail or a chunk (2K at most).
	maxEntries = 256
	// maxChainKeyLen is the longest chain key: a tenant, 0, seq.
	maxChainKeyLen = fsm.MaxNameBytes + 1 + seqLen
	// minEntryLen is the shortest entry: key, length byte, a chain key of
	// the empty tenant.
	minEntryLen = sortLen + 1 + 1 + seqLen
)

// jobValue is a decoded job value. Its slices point into the input.
type jobValue struct {
	state     []byte // job state record; nil: the job has no state (only history)
	sealed    bool   // some entries were sealed into chunks
	sealedMax [sortLen]byte
	count     int    // tail entries
	tail      []byte // tail entries, encoded
}

func appendJobValue(b []byte, v *jobValue) []byte {
	var flags byte
	if v.state != nil {
		flags |= flagState
	}
	if v.sealed {
		flags |= flagSealed
	}
	b = append(b, jobValueVersion, flags)
	if v.state != nil {
		b = binary.AppendUvarint(b, uint64(len(v.state)))
		b = append(b, v.state...)
	}
	if v.sealed {
		b = append(b, v.sealedMax[:]...)
	}
	b = binary.AppendUvarint(b, uint64(v.count))
	return append(b, v.tail...)
}

// decodeJobValue checks and splits a job value.
func decodeJobValue(b []byte) (jobValue, error) {
	var v jobValue
	if len(b) < 3 || b[0] != jobValueVersion || b[1]&^(flagState|flagSealed) != 0 {
		return v, fmt.Errorf("%w: job value header", ErrCorrupt)
	}
	flags, rest := b[1], b[2:]
	if flags&flagState != 0 {
		n, k := uvarint(rest)
		if k <= 0 || n == 0 || n > fsm.MaxRecordBytes || n > uint64(len(rest)-k) {
			return v, fmt.Errorf("%w: job value state length", ErrCorrupt)
		}
		v.state, rest = rest[k:k+int(n)], rest[k+int(n):]
	}
	if flags&flagSealed != 0 {
		if len(rest) < sortLen {
			return v, fmt.Errorf("%w: job value sealed max", ErrCorrupt)
		}
		v.sealed = true
		copy(v.sealedMax[:], rest)
		rest = rest[sortLen:]
	}
	n, k := uvarint(rest)
	if k <= 0 || n > maxEntries {
		return v, fmt.Errorf("%w: job value tail count", ErrCorrupt)
	}
	v.count, v.tail = int(n), rest[k:]
	var after []byte
	if v.sealed {
		after = v.sealedMax[:]
	}
	if err := checkEntries(v.tail, v.count, after); err != nil {
		return v, fmt.Errorf("job value tail: %w", err)
	}
	return v, nil
}

func appendChunk(b []byte, count int, entries []byte) []byte {
	b = binary.AppendUvarint(b, uint64(count))
	return append(b, entries...)
}

// decodeChunk checks a chunk and returns its entry count and entries.
func decodeChunk(b []byte) (int, []byte, error) {
	n, k := uvarint(b)
	if k <= 0 || n == 0 || n > maxEntries {
		return 0, nil, fmt.Errorf("%w: chunk count", ErrCorrupt)
	}
	if err := checkEntries(b[k:], int(n), nil); err != nil {
		return 0, nil, fmt.Errorf("chunk: %w", err)
	}
	return int(n), b[k:], nil
}

// uvarint reads a minimal uvarint; k <= 0 if there is none.
func uvarint(b []byte) (uint64, int) {
	v, k := binary.Uvarint(b)
	if k > 1 && b[k-1] == 0 {
		return 0, -1
	}
	return v, k
}

func appendEntry(b, key, chain []byte) []byte {
	b = append(b, key...)
	b = append(b, byte(len(chain)))
	return append(b, chain...)
}

// nextEntry splits the first entry off checked entries.
func nextEntry(b []byte) (key, chain, rest []byte) {
	n := int(b[sortLen])
	return b[:sortLen], b[sortLen+1 : sortLen+1+n], b[sortLen+1+n:]
}

// checkEntries checks that b holds exactly count well-formed entries in
// strictly increasing key order, all after `after` (if not nil).
func checkEntries(b []byte, count int, after []byte) error {
	if len(b) < count*minEntryLen {
		return fmt.Errorf("%w: %d entries in %d bytes", ErrCorrupt, count, len(b))
	}
	prev := after
	for i := range count {
		if len(b) < sortLen+1 {
			return fmt.Errorf("%w: entry %d truncated", ErrCorrupt, i)
		}
		n := int(b[sortLen])
		if n > maxChainKeyLen || len(b) < sortLen+1+n {
			return fmt.Errorf("%w: entry %d chain key", ErrCorrupt, i)
		}
		key, chain, rest := nextEntry(b)
		if _, _, err := parseChainKey(chain); err != nil {
			return err
		}
		if prev != nil && bytes.Compare(prev, key) >= 0 {
			return fmt.Errorf("%w: entry %d out of order", ErrCorrupt, i)
		}
		prev, b = key, rest
	}
	if len(b) != 0 {
		return fmt.Errorf("%w: %d bytes after the entries", ErrCorrupt, len(b))
	}
	return nil
}

// insertEntry inserts an entry into checked entries at its place (its key
// is not there yet) and returns the result, which may share b's array,
// and the offset of the new entry in it.
func insertEntry(b, key, chain []byte) ([]byte, int) {
	at := len(b)
	for rest := b; len(rest) > 0; {
		k, _, r := nextEntry(rest)
		if bytes.Compare(key, k) < 0 {
			at = len(b) - len(rest)
			break
		}
		rest = r
	}
	if at == len(b) {
		return appendEntry(b, key, chain), at
	}
	n := sortLen + 1 + len(chain)
	b = append(b, make([]byte, n)...)
	copy(b[at+n:], b[at:len(b)-n])
	appendEntry(b[at:at], key, chain)
	return b, at
}

// splitEntries returns the offset after the first n of checked entries.
func splitEntries(b []byte, n int) int {
	rest := b
	for range n {
		_, _, rest = nextEntry(rest)
	}
	return len(b) - len(rest)
}

// lastEntry returns the last of checked entries, nil if there are none.
func lastEntry(b []byte) []byte {
	var last []byte
	for len(b) > 0 {
		_, _, rest := nextEntry(b)
		last, b = b[:len(b)-len(rest)], rest
	}
	return last
}
