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
	// RunEntries is how many index records (mergeRecordBytes each) the
	// merge sorts in memory; past it, it sorts them in runs written to
	// files from NewRunFile and merges the runs (same output). Default
	// DefaultMergeRunEntries.
	RunEntries int
	// NewRunFile makes a temporary file for one run (the CLI: a file in
	// the temporary directory, removed on Close). Without it a merge of
	// more than RunEntries entries fails with ErrLimit.
	NewRunFile func() (RunFile, error)
}

// MergeResult says what Merge did.
type MergeResult struct {
	Manifest Manifest
	Inputs   int
	// Read is the entries of all inputs; Duplicates how many of them
	// were dropped as a repeat of an event id with the same body.
	Read       uint64
	Duplicates uint64
	// Runs is how many sorted runs went to temporary files (0: the merge
	// was in memory).
	Runs int
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
// Memory: mergeRecordBytes (112) per input entry up to RunEntries, plus
// one entry; past RunEntries the index goes to sorted runs on disk
// (runRecordBytes each) and memory stays at RunEntries records plus a
// read buffer per run. Entries are read again from their inputs by
// offset, so no input is held whole. The inputs' checkpoints are verified
// with them, then dropped: the output's are recomputed over the merged
// chain (signed with Signer, if set).
func Merge(dst io.Writer, srcs []Source, cfg MergeConfig) (MergeResult, error) {
	if cfg.CreatedBy == "" {
		cfg.CreatedBy = DefaultMergeCreatedBy
	}
	if cfg.RunEntries <= 0 {
		cfg.RunEntries = DefaultMergeRunEntries
	}
	if len(srcs) == 0 {
		return MergeResult{}, fmt.Errorf("bundle: merge: no inputs")
	}
	var recs []mergeRecord
	idRuns := &runs{newFile: cfg.NewRunFile}
	defer idRuns.close()
	var read uint64
	var tenant, tenantFrom string
	var created time.Time
	for i, s := range srcs {
		rep, err := Verify(io.NewSectionReader(s.R, 0, s.Size), VerifyConfig{PublicKey: cfg.PublicKey,
			OnEntry: func(e *Entry) error {
				if len(recs) == cfg.RunEntries {
					if err := idRuns.spill(recs, byID); err != nil {
						return err
					}
					recs = recs[:0]
				}
				read++
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
	res := MergeResult{Inputs: len(srcs), Read: read}
	// The duplicate rule over the records in byID order: from memory, or
	// from the runs; the kept records (one per id) are collected in recs
	// again, spilled in byKey runs when they are over RunEntries.
	var next func() (mergeRecord, bool, error)
	if len(idRuns.files) == 0 {
		slices.SortFunc(recs, byID)
		next = sliceNext(recs)
		recs = recs[:0] // the kept records overwrite the ones already read, as dedupe keeps fewer than it reads
	} else {
		if err := idRuns.spill(recs, byID); err != nil {
			return res, err
		}
		recs = recs[:0]
		var err error
		if next, err = idRuns.merge(byID); err != nil {
			return res, err
		}
	}
	keyRuns := &runs{newFile: cfg.NewRunFile}
	defer keyRuns.close()
	dups, err := dedupeStream(next, func(r mergeRecord) error {
		if len(recs) == cfg.RunEntries {
			if err := keyRuns.spill(recs, byKey); err != nil {
				return err
			}
			recs = recs[:0]
		}
		recs = append(recs, r)
		return nil
	}, srcs)
	res.Duplicates = dups
	res.Runs = len(idRuns.files)
	if err != nil {
		return res, err
	}
	idRuns.close()
	if len(keyRuns.files) == 0 {
		slices.SortFunc(recs, byKey)
		next = sliceNext(recs)
	} else {
		if err := keyRuns.spill(recs, byKey); err != nil {
			return res, err
		}
		res.Runs += len(keyRuns.files)
		if next, err = keyRuns.merge(byKey); err != nil {
			return res, err
		}
	}
	w, err := NewWriter(dst, WriterConfig{Tenant: tenant, CreatedAt: created, CreatedBy: cfg.CreatedBy,
		Rechain: true, Signer: cfg.Signer})
	if err != nil {
		return res, err
	}
	var buf []byte
	for {
		r, ok, err := next()
		if err != nil {
			return res, err
		}
		if !ok {
			break
		}
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
