package bundle

import (
	"bufio"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// The NDJSON writer before issue 15's streaming rework, kept verbatim as
// the reference the new one must equal byte for byte
// (TestNDJSON_EqualsLegacy) and the baseline of BenchmarkNDJSON: a
// 48-byte index record per entry sorted in memory, each entry read again
// by offset, each line by encoding/json.

// legacyRecord indexes one entry for the legacy sort (48 bytes).
type legacyRecord struct {
	key  fsm.EventKey
	off  int64
	size int64
}

func writeNDJSONLegacy(dst io.Writer, src Source, publicKey ed25519.PublicKey, rng *Range) (NDJSONManifest, error) {
	var recs []legacyRecord
	var head Head            // of the kept entry of greatest seq
	var lo, hi hlc.Timestamp // least and greatest kept HLC
	rep, err := Verify(io.NewSectionReader(src.R, 0, src.Size), VerifyConfig{PublicKey: publicKey,
		OnEntry: func(e *Entry) error {
			if rng != nil && !rng.Contains(e.Stored.HLC) {
				return nil
			}
			if len(recs) >= MaxSortEntries {
				return fmt.Errorf("%w: more than %d entries to sort", ErrLimit, MaxSortEntries)
			}
			if len(recs) == 0 || e.Stored.HLC.Less(lo) {
				lo = e.Stored.HLC
			}
			if len(recs) == 0 || hi.Less(e.Stored.HLC) {
				hi = e.Stored.HLC
			}
			head = Head{Seq: e.Stored.Seq, Link: e.Stored.Link}
			recs = append(recs, legacyRecord{key: e.Stored.Key(), off: e.Offset, size: int64(e.Size)})
			return nil
		}})
	if err != nil {
		return NDJSONManifest{}, fmt.Errorf("bundle: %s: %w", src.Name, err)
	}
	slices.SortFunc(recs, func(a, b legacyRecord) int { return a.key.Compare(b.key) })
	out := bufio.NewWriterSize(dst, writeBufferBytes)
	sum := sha256.New()
	w := io.MultiWriter(out, sum)
	var buf []byte
	for _, r := range recs {
		var se *fsm.StoredEvent
		if buf, se, err = readEntry(src, r.off, int(r.size), buf); err != nil {
			return NDJSONManifest{}, err
		}
		prev := genesisText
		if se.Seq > 1 {
			prev = hex.EncodeToString(buf[frameHeaderBytes : frameHeaderBytes+32])
		}
		line, err := json.Marshal(ndjsonLine{Seq: se.Seq, PrevLink: prev, Link: se.Link, BodyHash: se.BodyHash, Event: se.Event})
		if err != nil {
			return NDJSONManifest{}, fmt.Errorf("bundle: ndjson event %s: %w", se.ID, err)
		}
		w.Write(append(line, '\n'))
	}
	m := rep.Manifest
	nm := NDJSONManifest{Format: NDJSONFormatName, Version: NDJSONVersion, Order: "hlc", BundleID: m.BundleID,
		Tenant: m.Tenant, CreatedAt: m.CreatedAt, CreatedBy: m.CreatedBy, Count: m.Count,
		FirstHLC: m.FirstHLC, LastHLC: m.LastHLC, ChainHead: m.ChainHead, Start: m.Start, Range: rng}
	if rng != nil {
		nm.Count, nm.FirstHLC, nm.LastHLC, nm.ChainHead = uint64(len(recs)), lo, hi, head
		if len(recs) == 0 {
			nm.ChainHead = m.Start
		}
	}
	sum.Sum(nm.SHA256[:0])
	last, err := json.Marshal(ndjsonLast{Manifest: &nm})
	if err != nil {
		return NDJSONManifest{}, err
	}
	out.Write(append(last, '\n'))
	return nm, out.Flush()
}
