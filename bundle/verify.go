package bundle

import (
	"bufio"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"slices"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// readBufferBytes is Verify's input buffer.
const readBufferBytes = 64 << 10

// VerifyConfig configures Verify.
type VerifyConfig struct {
	// PublicKey, if set, must be among the bundle's signers.
	PublicKey ed25519.PublicKey
	// OnEntry, if set, is called with every entry once it verified
	// (Merge and WriteNDJSON index with it). An error it returns ends
	// Verify with that error.
	OnEntry func(*Entry) error
}

// Entry is one verified entry. Stored is a new value the callee may
// keep; Entry itself and Event are reused after the OnEntry call.
type Entry struct {
	Index int
	// Offset is the frame's position in the bundle, Size its length
	// (kind, length and payload).
	Offset int64
	Size   int
	// Prev is the previous link (zero for "genesis").
	Prev   fsm.Hash
	Stored *fsm.StoredEvent
	// Event is the event's binary encoding (fsm.Event.AppendBinary), a
	// slice of the frame.
	Event []byte
}

// Report is what Verify found.
type Report struct {
	// Manifest is the bundle's, once it decoded.
	Manifest Manifest
	// ManifestDigest is SHA-256 of the manifest frame's payload.
	ManifestDigest fsm.Hash
	// Entries is how many entries verified; Head the chain head they
	// reach.
	Entries uint64
	Head    fsm.ChainHead
	// Signers are the key ids of the signatures (each verified against
	// the key it carries); Trusted: one of them is VerifyConfig.PublicKey.
	Signers []string
	Trusted bool
	// Version is the bundle's format version.
	Version int
	// Start is the chain position before the first entry, taken as given
	// (zero: the bundle starts at genesis).
	Start fsm.ChainHead
	// Checkpoints is how many checkpoints verified (root, links, count,
	// and the signature when there is one); Signed how many of them were
	// signed.
	Checkpoints       uint64
	CheckpointsSigned uint64
}

// Verify reads a whole bundle and checks, in one pass and holding one
// entry at a time: the header; every entry's frame, decoding, seq
// (index+1), tenant, previous link (the previous entry's link, "genesis"
// first), body hash and link (fsm.ChainLink); then the seal's digest of
// the manifest, the manifest's fields against the entries (count,
// entries digest, chain head, first and last HLC, tenant, format), the
// signatures, and that nothing follows. The first failure is a
// *BreakError (errors.Is ErrBroken); a read error is returned as is. The
// Report holds what verified up to there.
func Verify(r io.Reader, cfg VerifyConfig) (Report, error) {
	v := verifier{r: bufio.NewReaderSize(r, readBufferBytes), cfg: cfg, entries: sha256.New(), cps: sha256.New()}
	err := v.run()
	return v.rep, err
}

type verifier struct {
	r        *bufio.Reader
	cfg      VerifyConfig
	rep      Report
	off      int64
	entries  hash.Hash
	tenant   string
	first    hlc.Timestamp
	last     hlc.Timestamp
	ends     [2]hlc.Timestamp // HLCs of the first and the last entry
	buf      []byte
	body     []byte
	entry    Entry
	manifest bool // the manifest was read: the next frame is the seal
	batch    batcher
	want     Checkpoint // the checkpoint the next frame must be, if pending
	pending  bool
	cps      hash.Hash
	unsigned []pendingSig // checkpoint signatures checked once the seal gives the keys
}

// pendingSig is a checkpoint signature to check against the seal's keys.
type pendingSig struct {
	index int
	cp    SignedCheckpoint
}

func brk(part string, index int, field, reason string) *BreakError {
	return &BreakError{Part: part, Index: index, Field: field, Reason: reason}
}

func (v *verifier) run() error {
	var hdr [len(Magic) + 1]byte
	if _, err := io.ReadFull(v.r, hdr[:]); err != nil {
		return v.readErr(err, brk(PartHeader, -1, "truncated", "file shorter than the header"))
	}
	if string(hdr[:len(Magic)]) != Magic {
		return brk(PartHeader, -1, "magic", "not a Strata bundle")
	}
	if ver := int(hdr[len(Magic)]); ver < MinVersion || ver > Version {
		return brk(PartHeader, -1, "version", fmt.Sprintf("container version %d, this verifier reads %d to %d", ver, MinVersion, Version))
	}
	v.rep.Version = int(hdr[len(Magic)])
	v.off = int64(len(hdr))
	for {
		index := int(v.rep.Entries)
		kind, payload, err := v.frame(index)
		if err != nil {
			return err
		}
		if v.pending && kind != kindCheckpoint {
			return &BreakError{Part: PartCheckpoint, Index: int(v.rep.Checkpoints), Seq: v.want.LastSeq, Field: "missing",
				Reason: fmt.Sprintf("no checkpoint after the entry of seq %d, which completes the batch %d..%d", v.want.LastSeq, v.want.FirstSeq, v.want.LastSeq)}
		}
		switch kind {
		case kindEntry:
			if err := v.verifyEntry(index, payload); err != nil {
				return err
			}
		case kindCheckpoint:
			if err := v.verifyCheckpoint(payload); err != nil {
				return err
			}
		case kindManifest:
			return v.finish(payload)
		default:
			return brk(PartEntry, index, "frame", fmt.Sprintf("frame kind 0x%02x", kind))
		}
	}
}

// readErr maps an unexpected end of input to b, and passes other read
// errors through.
func (v *verifier) readErr(err error, b *BreakError) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return b
	}
	return fmt.Errorf("bundle: read at offset %d: %w", v.off, err)
}

// frame reads the next frame and checks its CRC: kind and payload
// (valid until the next call; v.buf holds the whole frame). index names
// the entry the frame would be.
func (v *verifier) frame(index int) (byte, []byte, error) {
	var h [frameHeaderBytes]byte
	if _, err := io.ReadFull(v.r, h[:]); err != nil {
		where := fmt.Sprintf("ends after %d entries, before the manifest", index)
		if v.manifest {
			where = "ends after the manifest, before the seal"
		}
		return 0, nil, v.readErr(err, brk(PartFile, -1, "truncated", where))
	}
	kind, n := h[0], int(binary.LittleEndian.Uint32(h[1:]))
	limit, part, at := 0, PartEntry, index
	switch {
	case kind == kindEntry && !v.manifest:
		limit = MaxEntryBytes
	case kind == kindManifest && !v.manifest:
		limit, part, at = MaxManifestBytes, PartManifest, -1
	case kind == kindCheckpoint && !v.manifest && v.rep.Version >= 2:
		limit, part, at = MaxCheckpointBytes, PartCheckpoint, int(v.rep.Checkpoints)
	case kind == kindSeal && v.manifest:
		limit, part, at = MaxEnvelopeBytes, PartSignature, -1
	case v.manifest:
		return 0, nil, brk(PartSignature, -1, "frame", fmt.Sprintf("frame kind 0x%02x after the manifest, want the seal", kind))
	default:
		return 0, nil, brk(PartEntry, index, "frame", fmt.Sprintf("frame kind 0x%02x at offset %d", kind, v.off))
	}
	if n > limit {
		return 0, nil, brk(part, at, "frame", fmt.Sprintf("frame of %d bytes, over %d", n, limit))
	}
	size := frameHeaderBytes + n + frameTrailerBytes
	if cap(v.buf) < size {
		v.buf = make([]byte, size)
	}
	v.buf = v.buf[:size]
	copy(v.buf, h[:])
	if _, err := io.ReadFull(v.r, v.buf[frameHeaderBytes:]); err != nil {
		return 0, nil, v.readErr(err, brk(part, at, "truncated", "the file ends inside the frame"))
	}
	body := v.buf[:size-frameTrailerBytes]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(v.buf[size-frameTrailerBytes:]) {
		return 0, nil, brk(part, at, "crc", fmt.Sprintf("frame checksum does not match (offset %d)", v.off))
	}
	v.entry.Offset, v.entry.Size = v.off, size
	v.off += int64(size)
	return kind, body[frameHeaderBytes:], nil
}

func (v *verifier) verifyEntry(index int, payload []byte) error {
	v.entries.Write(v.buf)
	broken := func(field, reason string) error { return brk(PartEntry, index, field, reason) }
	if len(payload) < 32+1 {
		return broken("frame", fmt.Sprintf("entry of %d bytes", len(payload)))
	}
	rec := payload[32:]
	se, err := fsm.DecodeStoredEvent(rec)
	if err != nil {
		return broken("decode", err.Error())
	}
	_, vn := binary.Uvarint(rec[1:])
	named := func(field, reason string) error {
		return &BreakError{Part: PartEntry, Index: index, Seq: se.Seq, EventID: se.ID, Field: field, Reason: reason}
	}
	var prev fsm.Hash
	copy(prev[:], payload[:32])
	if index == 0 {
		v.tenant = se.Tenant
		v.batch.tenant = se.Tenant
		if v.rep.Version >= 2 && se.Seq > 1 { // mid-chain: the first previous link is taken as given
			v.rep.Start = fsm.ChainHead{Seq: se.Seq - 1, Link: prev}
			v.rep.Head = v.rep.Start
		}
	}
	head := v.rep.Head
	var want fsm.Hash
	if head.Seq > 0 {
		want = head.Link
	}
	switch {
	case se.Seq != head.Seq+1:
		return named("seq", fmt.Sprintf("seq %d, want %d", se.Seq, head.Seq+1))
	case se.Tenant != v.tenant:
		return named("tenant", fmt.Sprintf("tenant %q in a chain of %q", se.Tenant, v.tenant))
	case prev != want:
		return named("prev_link", "previous link is not the previous entry's link")
	}
	if v.body, err = fsm.AppendBody(v.body[:0], se.Body); err != nil {
		return named("body_hash", err.Error())
	}
	if fsm.Hash(sha256.Sum256(v.body)) != se.BodyHash {
		return named("body_hash", "the body does not match its stored hash")
	}
	if fsm.ChainLink(head, &se.Event, se.BodyHash) != se.Link {
		return named("link", "stored link does not match the recomputed link")
	}
	if index == 0 || se.HLC.Less(v.first) {
		v.first = se.HLC
	}
	if index == 0 || v.last.Less(se.HLC) {
		v.last = se.HLC
	}
	if index == 0 {
		v.ends[0] = se.HLC
	}
	v.ends[1] = se.HLC
	v.rep.Head = fsm.ChainHead{Seq: se.Seq, Link: se.Link}
	v.rep.Entries++
	if cp, ok := v.batch.add(se.Seq, prev, se.Link); ok && v.rep.Version >= 2 {
		v.want, v.pending = cp, true
	}
	if v.cfg.OnEntry != nil {
		v.entry.Index, v.entry.Prev, v.entry.Stored = index, prev, se
		v.entry.Event = rec[1+vn+64:]
		return v.cfg.OnEntry(&v.entry)
	}
	return nil
}

// finish checks the manifest (payload), the seal after it, and the end.
func (v *verifier) finish(payload []byte) error {
	mb := append([]byte(nil), payload...)
	v.rep.ManifestDigest = sha256.Sum256(mb)
	v.manifest = true
	_, eb, err := v.frame(-1)
	if err != nil {
		return err
	}
	env, err := DecodeEnvelope(eb)
	if err != nil {
		return brk(PartSignature, -1, "envelope", err.Error())
	}
	if env.PayloadType != PayloadType {
		return brk(PartSignature, -1, "envelope", fmt.Sprintf("payload type %q", env.PayloadType))
	}
	if len(env.Payload) != 32 || fsm.Hash(env.Payload) != v.rep.ManifestDigest {
		return brk(PartManifest, -1, "digest", "the manifest does not match the digest in the seal")
	}
	if err := v.checkCheckpointSignatures(env); err != nil { // names the checkpoint before the manifest's digest of them
		return err
	}
	if err := v.checkManifest(mb); err != nil {
		return err
	}
	ids, err := env.Open(v.cfg.PublicKey)
	v.rep.Signers = ids
	if err != nil {
		return brk(PartSignature, -1, "signature", err.Error())
	}
	v.rep.Trusted = v.cfg.PublicKey != nil
	var one [1]byte
	if n, _ := io.ReadFull(v.r, one[:]); n > 0 {
		return brk(PartFile, -1, "trailing", fmt.Sprintf("data after the seal at offset %d", v.off))
	}
	return nil
}

func (v *verifier) checkManifest(mb []byte) error {
	var m Manifest
	if err := decodeStrict(mb, &m); err != nil {
		return brk(PartManifest, -1, "json", err.Error())
	}
	v.rep.Manifest = m
	var entries fsm.Hash
	v.entries.Sum(entries[:0])
	bad := func(field string, got, want any) error {
		return brk(PartManifest, -1, field, fmt.Sprintf("manifest says %v, the entries give %v", got, want))
	}
	if v.rep.Entries == 0 && v.rep.Version >= 2 { // an empty bundle's start is the manifest's
		v.rep.Start = fsm.ChainHead{Seq: m.Start.Seq, Link: m.Start.Link}
		v.rep.Head = v.rep.Start
	}
	head := Head{Seq: v.rep.Head.Seq, Link: v.rep.Head.Link}
	start := Head{Seq: v.rep.Start.Seq, Link: v.rep.Start.Link}
	var cps fsm.Hash
	if v.rep.Checkpoints > 0 {
		v.cps.Sum(cps[:0])
	}
	switch {
	case m.Format != FormatName:
		return bad("format", m.Format, FormatName)
	case m.Version != v.rep.Version:
		return bad("version", m.Version, v.rep.Version)
	case m.Version == 1 && (m.Start != Head{} || m.Checkpoints != 0 || m.CheckpointsSHA256 != fsm.Hash{} || m.Range != nil):
		return brk(PartManifest, -1, "version", "a version 1 manifest with version 2 fields")
	case m.Start != start:
		return bad("start", m.Start, start)
	case m.Checkpoints != v.rep.Checkpoints:
		return bad("checkpoints", m.Checkpoints, v.rep.Checkpoints)
	case m.CheckpointsSHA256 != cps:
		return bad("checkpoints_sha256", m.CheckpointsSHA256, cps)
	case m.BundleID == "":
		return brk(PartManifest, -1, "bundle_id", "empty")
	case m.Count != v.rep.Entries:
		return bad("count", m.Count, v.rep.Entries)
	case m.EntriesSHA256 != entries:
		return bad("entries_sha256", m.EntriesSHA256, entries)
	case m.ChainHead != head:
		return bad("chain_head", m.ChainHead, head)
	case m.Count > 0 && m.Tenant != v.tenant:
		return bad("tenant", m.Tenant, v.tenant)
	case m.FirstHLC != v.first:
		return bad("first_hlc", m.FirstHLC, v.first)
	case m.LastHLC != v.last:
		return bad("last_hlc", m.LastHLC, v.last)
	case m.Range != nil && m.Range.To.Less(m.Range.From):
		return brk(PartManifest, -1, "range", fmt.Sprintf("range %s..%s ends before it starts", m.Range.From, m.Range.To))
	case m.Range != nil && m.Count > 0 && !(m.Range.Contains(v.ends[0]) && m.Range.Contains(v.ends[1])):
		return brk(PartManifest, -1, "range", fmt.Sprintf("the first and last entries (HLC %s, %s) are not both in the range %s..%s",
			v.ends[0], v.ends[1], m.Range.From, m.Range.To))
	}
	for _, f := range []struct{ name, v string }{{"tenant", m.Tenant}, {"bundle_id", m.BundleID}, {"created_by", m.CreatedBy}} {
		if len(f.v) > fsm.MaxNameBytes {
			return brk(PartManifest, -1, f.name, fmt.Sprintf("%d bytes, over %d", len(f.v), fsm.MaxNameBytes))
		}
	}
	if t, err := m.Created(); err != nil || t.IsZero() {
		return brk(PartManifest, -1, "created_at", fmt.Sprintf("%q is not an RFC 3339 time after year 1", m.CreatedAt))
	}
	return nil
}

// verifyCheckpoint checks a checkpoint frame against the batch the
// entries before it completed: tenant, sequence numbers (the count), the
// link before the batch (continuity), its last link and the Merkle root
// recomputed from the batch's links; and its signature now if the
// verifier trusts a key, else once the seal gives the bundle's keys.
func (v *verifier) verifyCheckpoint(payload []byte) error {
	index := int(v.rep.Checkpoints)
	v.cps.Write(v.buf)
	broken := func(seq uint64, field, reason string) error {
		return &BreakError{Part: PartCheckpoint, Index: index, Seq: seq, Field: field, Reason: reason}
	}
	if !v.pending {
		return broken(0, "unexpected", fmt.Sprintf("a checkpoint after the entry of seq %d, which completes no batch in the bundle", v.rep.Head.Seq))
	}
	v.pending = false
	want := &v.want
	sc, err := DecodeCheckpoint(payload)
	if err != nil {
		return broken(want.LastSeq, "json", err.Error())
	}
	bad := func(field string, got, exp any) error {
		return broken(want.LastSeq, field, fmt.Sprintf("checkpoint says %v, the entries give %v", got, exp))
	}
	switch c := sc.Checkpoint; {
	case c.Tenant != want.Tenant:
		return bad("tenant", c.Tenant, want.Tenant)
	case c.FirstSeq != want.FirstSeq || c.LastSeq != want.LastSeq:
		return bad("count", fmt.Sprintf("%d..%d", c.FirstSeq, c.LastSeq), fmt.Sprintf("%d..%d", want.FirstSeq, want.LastSeq))
	case c.PrevLink != want.PrevLink:
		return bad("prev_link", c.PrevLink, want.PrevLink)
	case c.LastLink != want.LastLink:
		return bad("last_link", c.LastLink, want.LastLink)
	case c.Root != want.Root:
		return bad("root", c.Root, want.Root)
	}
	v.rep.Checkpoints++
	if sc.KeyID == "" {
		return nil
	}
	v.rep.CheckpointsSigned++
	if v.cfg.PublicKey == nil {
		v.unsigned = append(v.unsigned, pendingSig{index: index, cp: sc})
		return nil
	}
	if sc.KeyID != KeyID(v.cfg.PublicKey) {
		return broken(sc.LastSeq, "signature", fmt.Sprintf("signed by key %s, not the trusted key %s", sc.KeyID, KeyID(v.cfg.PublicKey)))
	}
	if err := VerifyCheckpoint(sc, v.cfg.PublicKey); err != nil {
		return broken(sc.LastSeq, "signature", err.Error())
	}
	return nil
}

// checkCheckpointSignatures checks the checkpoint signatures left for
// the seal: each against the key of the seal's signature of the same key
// id (integrity, as the seal's own signatures without a trusted key).
func (v *verifier) checkCheckpointSignatures(env *Envelope) error {
	for _, p := range v.unsigned {
		broken := func(reason string) error {
			return &BreakError{Part: PartCheckpoint, Index: p.index, Seq: p.cp.LastSeq, Field: "signature", Reason: reason}
		}
		i := slices.IndexFunc(env.Signatures, func(s Signature) bool { return s.KeyID == p.cp.KeyID })
		if i < 0 {
			return broken(fmt.Sprintf("signed by key %s, which does not sign the bundle: give the key with --pubkey", p.cp.KeyID))
		}
		if err := VerifyCheckpoint(p.cp, env.Signatures[i].PublicKey); err != nil {
			return broken(err.Error())
		}
	}
	return nil
}
