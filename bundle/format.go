package bundle

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// Wire constants (FORMAT.md). Never change their meaning: bundles are kept
// for years. A new layout gets a new Version and readers keep the old one.
const (
	// Magic opens every bundle file.
	Magic = "STRATAB\x00"
	// Version is the container version byte after Magic, and the
	// manifest's "version", of the bundles written now. Version 2 added
	// checkpoint frames, a chain that may start mid-chain (the manifest's
	// "start") and the export's HLC range.
	Version = 2
	// MinVersion is the oldest version Verify reads (version 1: no
	// checkpoints, always from genesis).
	MinVersion = 1
	// FormatName is the manifest's "format" of a binary bundle.
	FormatName = "strata-bundle"
	// PayloadType is the DSSE payload type of the seal: its payload is
	// the 32-byte SHA-256 of the manifest frame's payload.
	PayloadType = "application/vnd.strata.bundle-manifest-digest.v1"
)

// castagnoli is the CRC-32C table of frame checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Frame kinds.
const (
	kindEntry    byte = 'E'
	kindManifest byte = 'M'
	// kindCheckpoint (version 2) follows the entry that completes a batch
	// of CheckpointEvents entries wholly inside the bundle.
	kindCheckpoint byte = 'C'
	kindSeal       byte = 'S'
)

// Limits, checked before allocating.
const (
	// frameHeaderBytes is a frame's kind and length.
	frameHeaderBytes = 1 + 4
	// frameTrailerBytes is a frame's CRC-32C.
	frameTrailerBytes = 4
	// recordPrefixBytes is a stored event record's version, seq (at most
	// a 10-byte uvarint), link and body hash.
	recordPrefixBytes = 1 + binary.MaxVarintLen64 + 32 + 32
	// MaxEntryBytes bounds an entry frame's payload: previous link and
	// the stored event record of at most fsm.MaxEventBytes.
	MaxEntryBytes = 32 + recordPrefixBytes + fsm.MaxEventBytes
	// MaxManifestBytes bounds the manifest frame's JSON.
	MaxManifestBytes = 16 << 10
	// MaxEnvelopeBytes bounds the seal's envelope JSON.
	MaxEnvelopeBytes = 16 << 10
	// MaxCheckpointBytes bounds a checkpoint frame's JSON.
	MaxCheckpointBytes = 1 << 10
	// MaxSignatures bounds the signatures of one envelope.
	MaxSignatures = 8
	// MaxSortEntries bounds the lines VerifyNDJSON checks (it keeps 72
	// bytes a line to check the chain's continuity once all are read).
	// WriteNDJSON and Merge are not bounded by it: past their run size
	// they sort in runs on disk.
	MaxSortEntries = 4_000_000
)

// Sentinel errors.
var (
	// ErrBroken: a bundle does not verify; errors.As gives a *BreakError
	// naming the first broken entry or field.
	ErrBroken = errors.New("bundle: does not verify")
	// ErrBodyConflict: two inputs of a merge hold one event id with
	// different bodies (a *ConflictError names it).
	ErrBodyConflict = errors.New("bundle: event id with different bodies")
	// ErrTenant: inputs of a merge, or events given to a Writer, of
	// different tenants.
	ErrTenant = errors.New("bundle: tenant mismatch")
	// ErrLimit: more entries than a sort may hold (MaxSortEntries).
	ErrLimit = errors.New("bundle: over a limit")
	// ErrKey: a key file that is not an ed25519 key.
	ErrKey = errors.New("bundle: bad key")
)

// Parts of a bundle a BreakError names.
const (
	PartHeader     = "header"
	PartEntry      = "entry"
	PartManifest   = "manifest"
	PartSignature  = "signature"
	PartCheckpoint = "checkpoint"
	PartFile       = "file"
	PartLine       = "line" // NDJSON
)

// BreakError names the first thing of a bundle that does not verify.
// errors.Is(err, ErrBroken) holds.
type BreakError struct {
	// Part is one of the Part constants.
	Part string
	// Index is the entry's (or line's, or checkpoint's) position from 0;
	// -1 when the break is not in one.
	Index int
	// Seq and EventID are the entry's as stored, when it decoded.
	Seq     uint64
	EventID fsm.EventID
	// Field is what did not verify: "frame", "decode", "seq", "tenant",
	// "prev_link", "body_hash", "link", "count", "entries_sha256",
	// "chain_head", "first_hlc", "last_hlc", "digest", "signature",
	// "truncated", "trailing", "order", "json", ...
	Field  string
	Reason string
}

func (e *BreakError) Error() string {
	where := e.Part
	if e.Index >= 0 {
		where = fmt.Sprintf("%s %d", e.Part, e.Index)
		if !e.EventID.IsZero() {
			where += fmt.Sprintf(" (seq %d, event %s)", e.Seq, e.EventID)
		}
	}
	return fmt.Sprintf("bundle: %s: %s: %s", where, e.Field, e.Reason)
}

// Unwrap makes errors.Is(err, ErrBroken) hold.
func (e *BreakError) Unwrap() error { return ErrBroken }

// ConflictError names an event id two merge inputs hold with different
// bodies. errors.Is(err, ErrBodyConflict) holds.
type ConflictError struct {
	EventID fsm.EventID
	// Inputs name the two bundles (Source.Name), in name order.
	Inputs [2]string
	// BodyHashes are the two bodies' SHA-256, in the order of Inputs.
	BodyHashes [2]fsm.Hash
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("bundle: merge refused: event %s has body %s in %s and body %s in %s",
		e.EventID, e.BodyHashes[0], e.Inputs[0], e.BodyHashes[1], e.Inputs[1])
}

// Unwrap makes errors.Is(err, ErrBodyConflict) hold.
func (e *ConflictError) Unwrap() error { return ErrBodyConflict }

// Head is a chain head in the manifest.
type Head struct {
	Seq  uint64   `json:"seq"`
	Link fsm.Hash `json:"link"`
}

// Manifest describes a bundle (FORMAT.md, "Manifest"). Its JSON is
// written by encoding/json in field order, so equal manifests have equal
// bytes.
type Manifest struct {
	Format    string `json:"format"`
	Version   int    `json:"version"`
	BundleID  string `json:"bundle_id"`
	Tenant    string `json:"tenant"`
	CreatedAt string `json:"created_at"` // RFC 3339, UTC, nanoseconds
	CreatedBy string `json:"created_by"`
	Count     uint64 `json:"count"`
	// FirstHLC and LastHLC are the least and the greatest HLC of the
	// entries (zero when there are none); in a chain of seq order late
	// events make them differ from the first and last entries' HLCs.
	FirstHLC      hlc.Timestamp `json:"first_hlc"`
	LastHLC       hlc.Timestamp `json:"last_hlc"`
	ChainHead     Head          `json:"chain_head"`
	EntriesSHA256 fsm.Hash      `json:"entries_sha256"`

	// Version 2 fields, omitted when zero (so a version-1 manifest never
	// has them).

	// Start is the chain position before the first entry: seq and link
	// of the entry the bundle does not hold (zero, omitted: genesis).
	Start Head `json:"start,omitzero"`
	// Checkpoints is how many checkpoint frames the bundle holds, and
	// CheckpointsSHA256 the SHA-256 over them, byte for byte (omitted
	// when there are none).
	Checkpoints       uint64   `json:"checkpoints,omitzero"`
	CheckpointsSHA256 fsm.Hash `json:"checkpoints_sha256,omitzero"`
	// Range is the HLC range an export was asked for (nil: the whole
	// chain). The entries are the contiguous sub-chain from the first to
	// the last entry whose HLC is in it, so the first and the last entry
	// are in it; entries between may not be (late events).
	Range *Range `json:"range,omitempty"`
}

// Range is an inclusive range of HLCs (total order: wall, logical,
// node).
type Range struct {
	From hlc.Timestamp `json:"from_hlc"`
	To   hlc.Timestamp `json:"to_hlc"`
}

// Contains reports whether t is in r.
func (r *Range) Contains(t hlc.Timestamp) bool { return !t.Less(r.From) && !r.To.Less(t) }

// Created parses CreatedAt.
func (m *Manifest) Created() (time.Time, error) {
	return time.Parse(time.RFC3339Nano, m.CreatedAt)
}

// formatTime is how CreatedAt is written.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// deriveID is the bundle id when the caller gives none: the first 16
// bytes of SHA-256("strata-bundle-id" ‖ tenant ‖ entries digest), hex.
func deriveID(tenant string, entries fsm.Hash) string {
	b := make([]byte, 0, 17+len(tenant)+1+len(entries))
	b = append(b, "strata-bundle-id\x00"...)
	b = append(b, tenant...)
	b = append(b, 0)
	b = append(b, entries[:]...)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// ParseRange reads an export's HLC range from its two bounds (GET
// /v1/export's from_hlc and to_hlc), either of which may be empty (no
// bound; both empty: nil, the whole chain). A bound is an HLC,
// "wall:logical:node", or a bare wall clock in ms: as from_hlc W means
// W:0:0, as to_hlc W:4294967295:4294967295, so both ends of the
// millisecond are in the range. The range is inclusive; from after to is
// an error.
func ParseRange(from, to string) (*Range, error) {
	if from == "" && to == "" {
		return nil, nil
	}
	r := &Range{To: hlc.Timestamp{WallMs: math.MaxInt64, Logical: math.MaxUint32, Node: math.MaxUint32}}
	var err error
	if from != "" {
		if r.From, err = parseBound(from, false); err != nil {
			return nil, fmt.Errorf("from_hlc %.40q: %w", from, err)
		}
	}
	if to != "" {
		if r.To, err = parseBound(to, true); err != nil {
			return nil, fmt.Errorf("to_hlc %.40q: %w", to, err)
		}
	}
	if r.To.Less(r.From) {
		return nil, fmt.Errorf("from_hlc %s is after to_hlc %s", r.From, r.To)
	}
	return r, nil
}

func parseBound(s string, upper bool) (hlc.Timestamp, error) {
	if strings.Contains(s, ":") {
		t, err := hlc.Parse(s)
		if err != nil {
			return t, errors.New("want wall:logical:node (e.g. 1700000000000:0:1) or a wall clock in ms")
		}
		return t, nil
	}
	w, err := strconv.ParseInt(s, 10, 64)
	if err != nil || w < 0 {
		return hlc.Timestamp{}, errors.New("want wall:logical:node (e.g. 1700000000000:0:1) or a wall clock in ms")
	}
	if upper {
		return hlc.Timestamp{WallMs: w, Logical: math.MaxUint32, Node: math.MaxUint32}, nil
	}
	return hlc.Timestamp{WallMs: w}, nil
}
