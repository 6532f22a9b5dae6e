package bundle

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

// Source is a bundle read by offset: Merge and WriteNDJSON read it twice
// (verify and index, then the entries in sorted order).
type Source struct {
	// Name names the input in errors (a file name).
	Name string
	R    io.ReaderAt
	Size int64
}

// DefaultMergeCreatedBy is a merged manifest's created_by unless the
// caller names one.
const DefaultMergeCreatedBy = "strata-bundle-merge"

// MergeConfig configures Merge.
type MergeConfig struct {
	// CreatedBy goes into the merged manifest; default
	// DefaultMergeCreatedBy. (The creation time is the latest input's.)
	CreatedBy string
	// Signer, if set, signs the merged bundle.
	Signer ed25519.PrivateKey
	// PublicKey, if set, must have signed every input.
	PublicKey ed25519.PublicKey
	// MaxEntries bounds the entries of all inputs together (the index is
	// in memory, mergeRecordBytes each); default and at most
	// MaxSortEntries.
	MaxEntries int
}

// MergeResult says what Merge did.
type MergeResult struct {
	Manifest Manifest
	Inputs   int
	// Read is the entries of all inputs; Duplicates how many of them
	// were dropped as a repeat of an event id with the same body.
	Read       uint64
	Duplicates uint64
}

// mergeRecord indexes one input entry: its order key, body and content
// digests (content: SHA-256 of the event's binary encoding), and where to
// read it again.
type mergeRecord struct {
	key     fsm.EventKey
	body    fsm.Hash
	content fsm.Hash
	off     int64
	size    int32
	src     int32
}

// mergeRecordBytes is the memory a merge holds per input entry.
const mergeRecordBytes = 16 + 16 + 32 + 32 + 8 + 4 + 4

// Merge verifies every input (a *BreakError names the input and its
// first broken entry), then writes one bundle to dst holding every event
// of them once, in HLC total order (wall, logical, node, event id), with
// a chain recomputed over that order from genesis. An event id found more
// than once with the same body is kept once, at its earliest HLC (ties:
// the least content digest) and the rest are counted as duplicates; an id
// with different bodies is refused with a *ConflictError and nothing
// useful is written. All inputs must be of one tenant.
//
// The output depends only on the set of inputs: the manifest's created_at
// is the latest input's, its bundle id is derived from the entries, and
// the order of inputs does not matter.
//
// Memory: mergeRecordBytes (112) per input entry, plus one entry; at
// most MaxEntries entries (4M: about 450 MB of index). Entries are read
// again from their inputs by offset, so no input is held whole.
func Merge(dst io.Writer, srcs []Source, cfg MergeConfig) (MergeResult, error) {
	if cfg.CreatedBy == "" {
		cfg.CreatedBy = DefaultMergeCreatedBy
	}
	if cfg.MaxEntries <= 0 || cfg.MaxEntries > MaxSortEntries {
		cfg.MaxEntries = MaxSortEntries
	}
	if len(srcs) == 0 {
		return MergeResult{}, fmt.Errorf("bundle: merge: no inputs")
	}
	var recs []mergeRecord
	var tenant, tenantFrom string
	var created time.Time
	for i, s := range srcs {
		rep, err := Verify(io.NewSectionReader(s.R, 0, s.Size), VerifyConfig{PublicKey: cfg.PublicKey,
			OnEntry: func(e *Entry) error {
				if len(recs) >= cfg.MaxEntries {
					return fmt.Errorf("%w: more than %d entries to merge", ErrLimit, cfg.MaxEntries)
				}
				recs = append(recs, mergeRecord{key: e.Stored.Key(), body: e.Stored.BodyHash,
					content: sha256.Sum256(e.Event), off: e.Offset, size: int32(e.Size), src: int32(i)})
				return nil
			}})
		if err != nil {
			return MergeResult{}, fmt.Errorf("bundle: merge input %s: %w", s.Name, err)
		}
		m := rep.Manifest
		if i == 0 {
			tenant, tenantFrom = m.Tenant, s.Name
		} else if m.Tenant != tenant {
			return MergeResult{}, fmt.Errorf("%w: %s is of tenant %q, %s of %q", ErrTenant, s.Name, m.Tenant, tenantFrom, tenant)
		}
		t, _ := m.Created() // Verify checked it parses
		if t.After(created) {
			created = t
		}
	}
	res := MergeResult{Inputs: len(srcs), Read: uint64(len(recs))}
	kept, err := dedupe(recs, srcs)
	if err != nil {
		return res, err
	}
	res.Duplicates = uint64(len(recs) - len(kept))
	slices.SortFunc(kept, func(a, b mergeRecord) int { return a.key.Compare(b.key) })
	w, err := NewWriter(dst, WriterConfig{Tenant: tenant, CreatedAt: created, CreatedBy: cfg.CreatedBy,
		Rechain: true, Signer: cfg.Signer})
	if err != nil {
		return res, err
	}
	var buf []byte
	for i := range kept {
		r := &kept[i]
		var se *fsm.StoredEvent
		if buf, se, err = readEntry(srcs[r.src], r.off, int(r.size), buf); err != nil {
			return res, err
		}
		if eventDigest(buf) != r.content {
			return res, fmt.Errorf("bundle: merge: %s changed since it verified (entry at offset %d)", srcs[r.src].Name, r.off)
		}
		if err := w.Append(se); err != nil {
			return res, fmt.Errorf("bundle: merge: write event %s: %w", se.ID, err)
		}
	}
	res.Manifest, err = w.Close()
	return res, err
}

// dedupe drops repeated event ids, keeping each id's earliest entry
// (HLC, then content digest), and refuses an id with two bodies. It
// reorders recs and returns the kept records, a prefix of recs.
func dedupe(recs []mergeRecord, srcs []Source) ([]mergeRecord, error) {
	slices.SortFunc(recs, func(a, b mergeRecord) int {
		if c := a.key.ID.Compare(b.key.ID); c != 0 {
			return c
		}
		if c := a.key.HLC.Compare(b.key.HLC); c != 0 {
			return c
		}
		return slices.Compare(a.content[:], b.content[:])
	})
	kept := recs[:0]
	for i := 0; i < len(recs); {
		j := i + 1
		for j < len(recs) && recs[j].key.ID == recs[i].key.ID {
			if recs[j].body != recs[i].body {
				return nil, conflict(&recs[i], &recs[j], srcs)
			}
			j++
		}
		kept = append(kept, recs[i])
		i = j
	}
	return kept, nil
}

func conflict(a, b *mergeRecord, srcs []Source) error {
	e := &ConflictError{EventID: a.key.ID, Inputs: [2]string{srcs[a.src].Name, srcs[b.src].Name},
		BodyHashes: [2]fsm.Hash{a.body, b.body}}
	if e.Inputs[0] > e.Inputs[1] {
		e.Inputs[0], e.Inputs[1] = e.Inputs[1], e.Inputs[0]
		e.BodyHashes[0], e.BodyHashes[1] = e.BodyHashes[1], e.BodyHashes[0]
	}
	return e
}

// eventDigest is SHA-256 of the event encoding inside an entry frame
// that decoded.
func eventDigest(frame []byte) fsm.Hash {
	rec := frame[frameHeaderBytes+32 : len(frame)-frameTrailerBytes]
	_, vn := binary.Uvarint(rec[1:])
	return sha256.Sum256(rec[1+vn+64:])
}

// readEntry reads and decodes the entry frame of size bytes at off in
// src, into buf (returned for reuse).
func readEntry(src Source, off int64, size int, buf []byte) ([]byte, *fsm.StoredEvent, error) {
	if size < frameHeaderBytes+32+frameTrailerBytes || size > frameHeaderBytes+MaxEntryBytes+frameTrailerBytes {
		return buf, nil, fmt.Errorf("bundle: %s: entry of %d bytes at offset %d", src.Name, size, off)
	}
	if cap(buf) < size {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if _, err := src.R.ReadAt(buf, off); err != nil {
		return buf, nil, fmt.Errorf("bundle: read %s at offset %d: %w", src.Name, off, err)
	}
	se, err := fsm.DecodeStoredEvent(buf[frameHeaderBytes+32 : size-frameTrailerBytes])
	if err != nil {
		return buf, nil, fmt.Errorf("bundle: %s changed since it verified: entry at offset %d: %w", src.Name, off, err)
	}
	return buf, se, nil
}
