package bundle

import (
	"bufio"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// writeBufferBytes is the Writer's output buffer.
const writeBufferBytes = 256 << 10

// WriterConfig configures a Writer.
type WriterConfig struct {
	// Tenant whose chain the bundle holds; every event must be its.
	Tenant string
	// BundleID names the bundle; empty derives it from the tenant and the
	// entries' digest (deriveID), so equal chains get equal ids.
	BundleID string
	// CreatedAt and CreatedBy go into the manifest as given: the package
	// reads no clock. CreatedAt must not be zero.
	CreatedAt time.Time
	CreatedBy string
	// Rechain makes the Writer assign each event's Seq, Link and BodyHash
	// (a chain recomputed over the order given: Merge). Otherwise the
	// events must carry a chain from genesis, and the Writer checks each
	// one before writing it.
	Rechain bool
	// Signer, if set, signs the manifest digest and every checkpoint.
	Signer ed25519.PrivateKey
	// Start is the chain position before the first event: zero for a
	// chain from genesis; else the seq and link of the entry before the
	// first one (an export of an HLC range). Not with Rechain.
	Start fsm.ChainHead
	// Range is the HLC range the entries were chosen by, recorded in the
	// manifest (nil: none). The Writer does not filter by it.
	Range *Range
}

// Validate checks c.
func (c *WriterConfig) Validate() error {
	switch {
	case len(c.Tenant) > fsm.MaxNameBytes:
		return fmt.Errorf("bundle: config: tenant of %d bytes, over %d", len(c.Tenant), fsm.MaxNameBytes)
	case len(c.BundleID) > fsm.MaxNameBytes:
		return fmt.Errorf("bundle: config: bundle id of %d bytes, over %d", len(c.BundleID), fsm.MaxNameBytes)
	case len(c.CreatedBy) > fsm.MaxNameBytes:
		return fmt.Errorf("bundle: config: created_by of %d bytes, over %d", len(c.CreatedBy), fsm.MaxNameBytes)
	case c.CreatedAt.IsZero():
		return errors.New("bundle: config: CreatedAt is required")
	case c.Signer != nil && len(c.Signer) != ed25519.PrivateKeySize:
		return fmt.Errorf("%w: signer of %d bytes", ErrKey, len(c.Signer))
	case c.Rechain && c.Start != (fsm.ChainHead{}):
		return errors.New("bundle: config: a rechained bundle starts at genesis")
	case c.Start.Seq == 0 && c.Start.Link != (fsm.Hash{}):
		return errors.New("bundle: config: a start link without a start seq")
	case c.Range != nil && c.Range.To.Less(c.Range.From):
		return fmt.Errorf("bundle: config: range %s..%s ends before it starts", c.Range.From, c.Range.To)
	}
	return nil
}

// Writer streams a bundle: NewWriter writes the header, Append one entry
// per event (and a checkpoint after each entry that completes a batch),
// Close the manifest and the seal. It holds one entry and one batch's
// links at a time. After an error every call returns it.
type Writer struct {
	w       *bufio.Writer
	cfg     WriterConfig
	head    fsm.ChainHead
	n       uint64 // entries written
	first   hlc.Timestamp
	last    hlc.Timestamp
	entries hash.Hash
	batch   batcher
	cps     hash.Hash // of the checkpoint frames
	ncps    uint64
	buf     []byte // the frame being written
	body    []byte // the body's canonical encoding
	err     error
	closed  bool
}

// NewWriter writes the header of a bundle to w.
func NewWriter(w io.Writer, cfg WriterConfig) (*Writer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	bw := &Writer{w: bufio.NewWriterSize(w, writeBufferBytes), cfg: cfg, head: cfg.Start, entries: sha256.New(),
		cps: sha256.New(), batch: batcher{tenant: cfg.Tenant}}
	bw.w.WriteString(Magic)
	bw.w.WriteByte(Version)
	return bw, nil
}

// Append writes one event. Without Rechain, se must continue the chain:
// Seq one more than the previous event's (1 for the first), BodyHash the
// SHA-256 of its body, Link recomputed from the previous link; a break is
// a *BreakError and nothing is written. With Rechain, se's Seq, Link and
// BodyHash are ignored and assigned. se is not kept.
func (w *Writer) Append(se *fsm.StoredEvent) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("bundle: append after close")
	}
	index := int(w.n)
	broken := func(field, reason string) error {
		return &BreakError{Part: PartEntry, Index: index, Seq: se.Seq, EventID: se.ID, Field: field, Reason: reason}
	}
	if se.Tenant != w.cfg.Tenant {
		return fmt.Errorf("%w: event %s of tenant %q in a bundle of %q", ErrTenant, se.ID, se.Tenant, w.cfg.Tenant)
	}
	if se.Body == nil {
		return broken("decode", "no body")
	}
	var err error
	if w.body, err = fsm.AppendBody(w.body[:0], se.Body); err != nil {
		return broken("decode", err.Error())
	}
	bh := fsm.Hash(sha256.Sum256(w.body))
	link := fsm.ChainLink(w.head, &se.Event, bh)
	out := se
	if w.cfg.Rechain {
		out = &fsm.StoredEvent{Event: se.Event, Seq: w.head.Seq + 1, Link: link, BodyHash: bh}
	} else {
		switch {
		case se.Seq != w.head.Seq+1:
			return broken("seq", fmt.Sprintf("seq %d after %d", se.Seq, w.head.Seq))
		case se.BodyHash != bh:
			return broken("body_hash", "stored body hash does not match the body")
		case se.Link != link:
			return broken("link", "stored link does not match the recomputed link")
		}
	}
	w.buf = append(w.buf[:0], kindEntry, 0, 0, 0, 0)
	var prev fsm.Hash
	if w.head.Seq > 0 {
		prev = w.head.Link
	}
	w.buf = append(w.buf, prev[:]...)
	if w.buf, err = fsm.AppendStoredEventBody(w.buf, out, w.body); err != nil {
		return broken("decode", err.Error())
	}
	n := len(w.buf) - frameHeaderBytes
	if n > MaxEntryBytes {
		return broken("frame", fmt.Sprintf("entry of %d bytes, over %d", n, MaxEntryBytes))
	}
	binary.LittleEndian.PutUint32(w.buf[1:], uint32(n))
	w.buf = binary.LittleEndian.AppendUint32(w.buf, crc32.Checksum(w.buf, castagnoli))
	w.entries.Write(w.buf)
	if _, err := w.w.Write(w.buf); err != nil {
		w.err = fmt.Errorf("bundle: write entry %d: %w", index, err)
		return w.err
	}
	if w.n == 0 || se.HLC.Less(w.first) {
		w.first = se.HLC
	}
	if w.n == 0 || w.last.Less(se.HLC) {
		w.last = se.HLC
	}
	w.head = fsm.ChainHead{Seq: out.Seq, Link: link}
	w.n++
	if cp, ok := w.batch.add(out.Seq, prev, link); ok {
		return w.checkpoint(cp)
	}
	return nil
}

// checkpoint writes the checkpoint frame of a completed batch.
func (w *Writer) checkpoint(cp Checkpoint) error {
	b, err := json.Marshal(SignCheckpoint(cp, w.cfg.Signer))
	if err != nil {
		w.err = err
		return err
	}
	w.buf = appendFrame(w.buf[:0], kindCheckpoint, b)
	w.cps.Write(w.buf)
	w.ncps++
	if _, err := w.w.Write(w.buf); err != nil {
		w.err = fmt.Errorf("bundle: write checkpoint %d..%d: %w", cp.FirstSeq, cp.LastSeq, err)
		return w.err
	}
	return nil
}

// appendFrame appends a frame of kind and payload to b.
func appendFrame(b []byte, kind byte, payload []byte) []byte {
	b = append(b, kind, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(b[len(b)-4:], uint32(len(payload)))
	b = append(b, payload...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[len(b)-len(payload)-frameHeaderBytes:], castagnoli))
}

// batcher collects the links of the batch being written or read and
// gives its checkpoint once the batch is complete. A batch is counted
// only if its first entry is in the bundle (a bundle that starts
// mid-batch has no checkpoint for that batch).
type batcher struct {
	tenant string
	on     bool
	prev   fsm.Hash
	links  []fsm.Hash
}

// add takes the entry of seq whose previous link is prev (zero:
// genesis) and whose link is link.
func (b *batcher) add(seq uint64, prev, link fsm.Hash) (Checkpoint, bool) {
	if (seq-1)%CheckpointEvents == 0 {
		b.on, b.prev, b.links = true, prev, b.links[:0]
	}
	if !b.on {
		return Checkpoint{}, false
	}
	b.links = append(b.links, link)
	if seq%CheckpointEvents != 0 {
		return Checkpoint{}, false
	}
	b.on = false
	return Checkpoint{Tenant: b.tenant, FirstSeq: seq - CheckpointEvents + 1, LastSeq: seq, PrevLink: b.prev,
		LastLink: link, Root: MerkleRoot(b.links)}, true
}

// Close writes the manifest and the seal and flushes; it does not close
// the underlying writer. It returns the manifest written.
func (w *Writer) Close() (Manifest, error) {
	if w.err != nil {
		return Manifest{}, w.err
	}
	if w.closed {
		return Manifest{}, errors.New("bundle: closed twice")
	}
	w.closed = true
	m := Manifest{Format: FormatName, Version: Version, BundleID: w.cfg.BundleID, Tenant: w.cfg.Tenant,
		CreatedAt: formatTime(w.cfg.CreatedAt), CreatedBy: w.cfg.CreatedBy, Count: w.n,
		FirstHLC: w.first, LastHLC: w.last, ChainHead: Head{Seq: w.head.Seq, Link: w.head.Link},
		Start: Head{Seq: w.cfg.Start.Seq, Link: w.cfg.Start.Link}, Checkpoints: w.ncps, Range: w.cfg.Range}
	w.entries.Sum(m.EntriesSHA256[:0])
	if w.ncps > 0 {
		w.cps.Sum(m.CheckpointsSHA256[:0])
	}
	if m.BundleID == "" {
		m.BundleID = deriveID(m.Tenant, m.EntriesSHA256)
	}
	mb, err := json.Marshal(&m)
	if err != nil {
		return Manifest{}, err
	}
	env, err := Seal(sha256.Sum256(mb), w.cfg.Signer)
	if err != nil {
		return Manifest{}, err
	}
	eb, err := json.Marshal(env)
	if err != nil {
		return Manifest{}, err
	}
	w.frame(kindManifest, mb)
	w.frame(kindSeal, eb)
	if err := w.w.Flush(); err != nil {
		w.err = fmt.Errorf("bundle: write manifest: %w", err)
		return Manifest{}, w.err
	}
	return m, nil
}

func (w *Writer) frame(kind byte, payload []byte) {
	var h [frameHeaderBytes]byte
	h[0] = kind
	binary.LittleEndian.PutUint32(h[1:], uint32(len(payload)))
	crc := crc32.Update(crc32.Checksum(h[:], castagnoli), castagnoli, payload)
	w.w.Write(h[:])
	w.w.Write(payload)
	w.w.Write(binary.LittleEndian.AppendUint32(nil, crc))
}

// Head is the chain head of the entries written so far.
func (w *Writer) Head() fsm.ChainHead { return w.head }

// WriteChain writes a whole bundle from an iteration in chain order, as
// a store's ChainEvents gives it:
//
//	bundle.WriteChain(w, cfg, func(fn func(*fsm.StoredEvent) error) error {
//		return tx.ChainEvents(tenant, 0, fn)
//	})
func WriteChain(dst io.Writer, cfg WriterConfig, each func(fn func(*fsm.StoredEvent) error) error) (Manifest, error) {
	w, err := NewWriter(dst, cfg)
	if err != nil {
		return Manifest{}, err
	}
	if err := each(w.Append); err != nil {
		return Manifest{}, err
	}
	return w.Close()
}
