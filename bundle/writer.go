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
	// Signer, if set, signs the manifest digest.
	Signer ed25519.PrivateKey
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
	}
	return nil
}

// Writer streams a bundle: NewWriter writes the header, Append one entry
// per event, Close the manifest and the seal. It holds one entry at a
// time. After an error every call returns it.
type Writer struct {
	w       *bufio.Writer
	cfg     WriterConfig
	head    fsm.ChainHead
	first   hlc.Timestamp
	last    hlc.Timestamp
	entries hash.Hash
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
	bw := &Writer{w: bufio.NewWriterSize(w, writeBufferBytes), cfg: cfg, entries: sha256.New()}
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
	index := int(w.head.Seq)
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
	if w.head.Seq == 0 || se.HLC.Less(w.first) {
		w.first = se.HLC
	}
	if w.head.Seq == 0 || w.last.Less(se.HLC) {
		w.last = se.HLC
	}
	w.head = fsm.ChainHead{Seq: out.Seq, Link: link}
	return nil
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
		CreatedAt: formatTime(w.cfg.CreatedAt), CreatedBy: w.cfg.CreatedBy, Count: w.head.Seq,
		FirstHLC: w.first, LastHLC: w.last, ChainHead: Head{Seq: w.head.Seq, Link: w.head.Link}}
	w.entries.Sum(m.EntriesSHA256[:0])
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
