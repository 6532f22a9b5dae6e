package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
)

// Snapshot stream (fsm/DESIGN.md, "Snapshot"): a 32-byte header, records,
// an end marker and a trailer. Every store's snapshot uses this header;
// Kind says what follows it.
const (
	// SnapshotMagic starts every snapshot. Never change.
	SnapshotMagic = "STRTSNAP"
	// SnapshotVersion is the header layout version.
	SnapshotVersion = 1
	// SnapshotHeaderLen is the header's length in bytes.
	SnapshotHeaderLen = 32
)

// SnapshotKind says what follows the header.
type SnapshotKind uint8

const (
	// SnapshotKindRecords: the record stream of this file, written by
	// Ledger.Snapshot from any Store.
	SnapshotKindRecords SnapshotKind = 1
	// SnapshotKindStoreImage is reserved for a store's native image (a
	// bbolt file); such a store defines its own body and must still
	// check this header.
	SnapshotKindStoreImage SnapshotKind = 2
)

// Record types of a SnapshotKindRecords body. Never change.
const (
	snapEnd       = 0
	snapChainHead = 1 // str tenant, then a chain head record
	snapEvent     = 2 // stored event record
	snapJob       = 3 // job state record
	snapWorkflow  = 4 // workflow record
	snapWorker    = 5 // worker record
	snapMark      = 6 // str tenant, then a forward mark record
	snapPolicy    = 7 // governance record
	snapMeter     = 8 // rate meter record
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SnapshotHeader is the fixed header of every snapshot:
//
//	offset size field
//	0      8    magic "STRTSNAP"
//	8      2    version (little-endian), 1
//	10     1    kind
//	11     1    flags, 0
//	12     4    reserved, 0
//	16     8    applied index (little-endian)
//	24     4    reserved, 0
//	28     4    CRC-32C (Castagnoli) of bytes 0..27, little-endian
type SnapshotHeader struct {
	Kind         SnapshotKind
	AppliedIndex uint64
}

// AppendBinary appends the 32-byte header.
func (h SnapshotHeader) AppendBinary(b []byte) ([]byte, error) {
	at := len(b)
	b = append(b, SnapshotMagic...)
	b = binary.LittleEndian.AppendUint16(b, SnapshotVersion)
	b = append(b, byte(h.Kind), 0, 0, 0, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, h.AppliedIndex)
	b = append(b, 0, 0, 0, 0)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[at:], castagnoli)), nil
}

// DecodeSnapshotHeader checks and decodes a header: exactly
// SnapshotHeaderLen bytes, our magic, a known version and kind, zero
// reserved bytes and a matching checksum.
func DecodeSnapshotHeader(b []byte) (SnapshotHeader, error) {
	if len(b) != SnapshotHeaderLen {
		return SnapshotHeader{}, fmt.Errorf("%w: header of %d bytes, want %d", ErrSnapshot, len(b), SnapshotHeaderLen)
	}
	if string(b[:8]) != SnapshotMagic {
		return SnapshotHeader{}, fmt.Errorf("%w: not a strata snapshot (magic %q)", ErrSnapshot, b[:8])
	}
	if got, want := binary.LittleEndian.Uint32(b[28:]), crc32.Checksum(b[:28], castagnoli); got != want {
		return SnapshotHeader{}, fmt.Errorf("%w: header checksum %08x, computed %08x", ErrSnapshot, got, want)
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v != SnapshotVersion {
		return SnapshotHeader{}, fmt.Errorf("%w: header version %d", ErrSnapshot, v)
	}
	h := SnapshotHeader{Kind: SnapshotKind(b[10]), AppliedIndex: binary.LittleEndian.Uint64(b[16:])}
	if h.Kind != SnapshotKindRecords && h.Kind != SnapshotKindStoreImage {
		return SnapshotHeader{}, fmt.Errorf("%w: kind %d", ErrSnapshot, h.Kind)
	}
	for _, c := range append(b[11:16:16], b[24:28]...) {
		if c != 0 {
			return SnapshotHeader{}, fmt.Errorf("%w: reserved header bytes are not zero", ErrSnapshot)
		}
	}
	return h, nil
}

// snapWriter writes the stream through a buffer and a running CRC-32C.
type snapWriter struct {
	w     *bufio.Writer
	crc   hash.Hash32
	buf   []byte
	count uint64
}

func (s *snapWriter) write(p []byte) error {
	s.crc.Write(p)
	_, err := s.w.Write(p)
	return err
}

// record writes type, uvarint length and payload.
func (s *snapWriter) record(typ byte, payload []byte) error {
	var hdr [1 + binary.MaxVarintLen64]byte
	hdr[0] = typ
	n := binary.PutUvarint(hdr[1:], uint64(len(payload)))
	if err := s.write(hdr[:1+n]); err != nil {
		return err
	}
	s.count++
	return s.write(payload)
}

// Snapshot writes the ledger's state to w as one consistent snapshot. A
// store with a native image (ImageStore) writes that image; any other
// store gets the record stream (SnapshotRecords).
func (l *Ledger) Snapshot(w io.Writer) error {
	if is, ok := l.store.(ImageStore); ok {
		if err := is.WriteImage(w); err != nil {
			return fmt.Errorf("fsm: snapshot: %w", err)
		}
		return nil
	}
	return l.SnapshotRecords(w)
}

// SnapshotRecords writes the ledger's state to w as a record stream
// (SnapshotKindRecords) from one store View, whatever the store: chain
// heads and events per tenant, jobs, workflows, workers, forward marks,
// then a trailer
// with the record count, the ledger digest and a CRC-32C of the whole
// stream. The same state always gives the same bytes.
func (l *Ledger) SnapshotRecords(w io.Writer) error {
	err := l.store.View(func(tx ReadTx) error {
		index, err := tx.AppliedIndex()
		if err != nil {
			return err
		}
		sw := &snapWriter{w: bufio.NewWriterSize(w, 64<<10), crc: crc32.New(castagnoli)}
		hdr, _ := SnapshotHeader{Kind: SnapshotKindRecords, AppliedIndex: index}.AppendBinary(nil)
		if err := sw.write(hdr); err != nil {
			return err
		}
		digest, err := sw.body(tx)
		if err != nil {
			return err
		}
		return sw.trailer(digest)
	})
	if err != nil {
		return fmt.Errorf("fsm: snapshot: %w", err)
	}
	return nil
}

func (s *snapWriter) body(tx ReadTx) (Hash, error) {
	err := tx.ChainHeads(func(tenant string, head ChainHead) error {
		var err error
		if s.buf, err = appendTenantHead(s.buf[:0], tenant, head); err != nil {
			return err
		}
		if err := s.record(snapChainHead, s.buf); err != nil {
			return err
		}
		return tx.ChainEvents(tenant, 0, func(se *StoredEvent) error {
			if s.buf, err = AppendStoredEvent(s.buf[:0], se); err != nil {
				return err
			}
			return s.record(snapEvent, s.buf)
		})
	})
	if err != nil {
		return Hash{}, err
	}
	d := newLedgerDigest()
	err = tx.Jobs("", "", func(js *JobState) error {
		if err := d.add(js); err != nil {
			return err
		}
		var err error
		if s.buf, err = AppendJobState(s.buf[:0], js); err != nil {
			return err
		}
		return s.record(snapJob, s.buf)
	})
	if err != nil {
		return Hash{}, err
	}
	err = tx.Workflows("", func(w *WorkflowState) error {
		var err error
		if s.buf, err = AppendWorkflowState(s.buf[:0], w); err != nil {
			return err
		}
		return s.record(snapWorkflow, s.buf)
	})
	if err != nil {
		return Hash{}, err
	}
	err = tx.Workers(func(w *WorkerState) error {
		var err error
		if s.buf, err = AppendWorkerState(s.buf[:0], w); err != nil {
			return err
		}
		return s.record(snapWorker, s.buf)
	})
	if err != nil {
		return Hash{}, err
	}
	err = tx.ForwardMarks(func(tenant string, seq uint64) error {
		var err error
		if s.buf, err = appendTenantMark(s.buf[:0], tenant, seq); err != nil {
			return err
		}
		return s.record(snapMark, s.buf)
	})
	if err != nil {
		return Hash{}, err
	}
	err = tx.Policies("", func(p *Policy) error {
		var err error
		if s.buf, err = AppendPolicy(s.buf[:0], p); err != nil {
			return err
		}
		return s.record(snapPolicy, s.buf)
	})
	if err != nil {
		return Hash{}, err
	}
	err = tx.Meters(func(m *Meter) error {
		var err error
		if s.buf, err = AppendMeter(s.buf[:0], m); err != nil {
			return err
		}
		return s.record(snapMeter, s.buf)
	})
	return d.sum(), err
}

// trailer: end marker, record count (8), ledger digest (32), CRC-32C (4)
// of every byte before the CRC.
func (s *snapWriter) trailer(digest Hash) error {
	s.buf = append(s.buf[:0], snapEnd)
	s.buf = binary.LittleEndian.AppendUint64(s.buf, s.count)
	s.buf = append(s.buf, digest[:]...)
	if err := s.write(s.buf); err != nil {
		return err
	}
	if _, err := s.w.Write(binary.LittleEndian.AppendUint32(nil, s.crc.Sum32())); err != nil {
		return err
	}
	return s.w.Flush()
}

// Restore replaces the ledger's state with a snapshot written by Snapshot
// or SnapshotRecords. A record stream is checked as it is read (record
// bounds, decoders, chain links recomputed, ids in order) and at its end
// (record count, ledger digest, CRC); a store image is handed to the
// store (ImageStore), which checks it. On any failure the ledger keeps its
// previous state.
func (l *Ledger) Restore(r io.Reader) error {
	l.applyMu.Lock()
	defer l.applyMu.Unlock()
	var hdr [SnapshotHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return fmt.Errorf("fsm: restore: %w: truncated header: %v", ErrSnapshot, err)
	}
	h, err := DecodeSnapshotHeader(hdr[:])
	if err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	if h.Kind == SnapshotKindStoreImage {
		is, ok := l.store.(ImageStore)
		if !ok {
			return fmt.Errorf("fsm: restore: %w: a store image, and this store has none", ErrSnapshot)
		}
		if err := is.RestoreImage(h, r); err != nil {
			return fmt.Errorf("fsm: restore: %w", err)
		}
		l.restored(h.AppliedIndex)
		return nil
	}
	err = l.store.Replace(func(tx Tx) error {
		rs := &snapReader{r: bufio.NewReaderSize(io.MultiReader(bytes.NewReader(hdr[:]), r), 64<<10), crc: crc32.New(castagnoli)}
		if _, err := rs.header(); err != nil {
			return err
		}
		if err := tx.SetAppliedIndex(h.AppliedIndex); err != nil {
			return err
		}
		return rs.body(tx)
	})
	if err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	l.restored(h.AppliedIndex)
	return nil
}

// restored records a restore at index and tells the Observer.
func (l *Ledger) restored(index uint64) {
	l.applied.Store(index)
	if l.obs != nil {
		l.obs.Reset(index, l.store.View)
	}
}

// snapReader reads the stream through a running CRC-32C.
type snapReader struct {
	r     *bufio.Reader
	crc   hash.Hash32
	buf   []byte
	count uint64
}

func (s *snapReader) read(n int) ([]byte, error) {
	if cap(s.buf) < n {
		s.buf = make([]byte, n)
	}
	b := s.buf[:n]
	if _, err := io.ReadFull(s.r, b); err != nil {
		return nil, fmt.Errorf("%w: truncated: %v", ErrSnapshot, err)
	}
	s.crc.Write(b)
	return b, nil
}

func (s *snapReader) header() (uint64, error) {
	b, err := s.read(SnapshotHeaderLen)
	if err != nil {
		return 0, err
	}
	h, err := DecodeSnapshotHeader(b)
	if err != nil {
		return 0, err
	}
	if h.Kind != SnapshotKindRecords {
		return 0, fmt.Errorf("%w: kind %d is not a record stream", ErrSnapshot, h.Kind)
	}
	return h.AppliedIndex, nil
}

// next reads one record: its type and payload (valid until the next read).
func (s *snapReader) next() (byte, []byte, error) {
	t, err := s.read(1)
	if err != nil {
		return 0, nil, err
	}
	typ := t[0]
	if typ == snapEnd {
		return snapEnd, nil, nil
	}
	var n uint64
	for shift := 0; ; shift += 7 {
		c, err := s.read(1)
		if err != nil {
			return 0, nil, err
		}
		if shift > 21 || (c[0] == 0 && shift > 0) {
			return 0, nil, fmt.Errorf("%w: bad record length", ErrSnapshot)
		}
		n |= uint64(c[0]&0x7f) << shift
		if c[0] < 0x80 {
			break
		}
	}
	if n > MaxRecordBytes+2+MaxNameBytes {
		return 0, nil, fmt.Errorf("%w: record of %d bytes over the limit", ErrSnapshot, n)
	}
	s.count++
	b, err := s.read(int(n))
	return typ, b, err
}

func (s *snapReader) body(tx Tx) error {
	rs := restorer{tx: tx, digest: newLedgerDigest()}
	for {
		typ, payload, err := s.next()
		if err != nil {
			return err
		}
		if typ == snapEnd {
			if err := rs.endChain(); err != nil {
				return err
			}
			return s.trailer(rs.digest.sum())
		}
		if err := rs.record(typ, payload); err != nil {
			return fmt.Errorf("%w: record %d: %w", ErrSnapshot, s.count, err)
		}
	}
}

func (s *snapReader) trailer(digest Hash) error {
	b, err := s.read(8 + 32)
	if err != nil {
		return err
	}
	if n := binary.LittleEndian.Uint64(b); n != s.count {
		return fmt.Errorf("%w: trailer counts %d records, read %d", ErrSnapshot, n, s.count)
	}
	if Hash(b[8:40]) != digest {
		return fmt.Errorf("%w: ledger digest of the restored jobs does not match the trailer", ErrSnapshot)
	}
	want := s.crc.Sum32()
	var c [4]byte
	if _, err := io.ReadFull(s.r, c[:]); err != nil {
		return fmt.Errorf("%w: truncated checksum: %v", ErrSnapshot, err)
	}
	if got := binary.LittleEndian.Uint32(c[:]); got != want {
		return fmt.Errorf("%w: stream checksum %08x, computed %08x", ErrSnapshot, got, want)
	}
	if _, err := s.r.ReadByte(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: bytes after the trailer", ErrSnapshot)
	}
	return nil
}
