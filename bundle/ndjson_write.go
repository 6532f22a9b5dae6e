package bundle

import (
	"bufio"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// Writing NDJSON (FORMAT.md, "NDJSON"): one pass over the bundle
// verifies it and encodes each event's line as it goes; the lines are
// sorted by HLC total order in memory up to NDJSONConfig.RunBytes, past
// which they go to sorted runs in temporary files, merged at the end
// (runSet, shared with Merge). Nothing reaches dst before the whole
// bundle verified.

const (
	// DefaultNDJSONRunBytes is the lines (and their sort records) an
	// NDJSON export sorts in memory before it spills a sorted run to a
	// temporary file.
	DefaultNDJSONRunBytes = 16 << 20
	// ndjsonFanIn is the most runs an NDJSON export merges at once (a
	// 64 KiB read buffer and one line each); past it runs are merged into
	// bigger runs first (runSet).
	ndjsonFanIn = 64
	// lineRecBytes is a line's sort record in memory, besides the line.
	lineRecBytes = 16 + 16 + 8 + 24
	// lineRunHeaderBytes is a line's record in a run before the line:
	// HLC, event id, seq; then the line's length (uvarint) and the line.
	lineRunHeaderBytes = 16 + 16 + 8
	// arenaChunkBytes is the block lines are kept in while they are
	// sorted in memory; a line over a quarter of it gets its own.
	arenaChunkBytes = 1 << 20
)

// NDJSONConfig configures WriteNDJSONWith.
type NDJSONConfig struct {
	// PublicKey, if set, must have signed the bundle.
	PublicKey ed25519.PublicKey
	// Range keeps only the events whose HLC is in it (nil: all); the
	// manifest records it.
	Range *Range
	// RunBytes bounds the lines sorted in memory (with lineRecBytes
	// each); past it they are sorted in runs written to files from
	// NewRunFile and merged (same output). Default DefaultNDJSONRunBytes.
	RunBytes int
	// NewRunFile makes a temporary file for one run (the CLI and the
	// export API: a file in the temporary directory, removed on Close).
	// Without it an export of more than RunBytes of lines fails with
	// ErrLimit.
	NewRunFile func() (RunFile, error)
}

// WriteNDJSON verifies the bundle src (publicKey, if set, must have
// signed it) and writes its events to dst as NDJSON sorted by HLC total
// order: WriteNDJSONWith with the default configuration, so in memory,
// up to DefaultNDJSONRunBytes of lines (some 25,000 events).
func WriteNDJSON(dst io.Writer, src Source, publicKey ed25519.PublicKey) (NDJSONManifest, error) {
	return WriteNDJSONWith(dst, src, NDJSONConfig{PublicKey: publicKey})
}

// WriteNDJSONRange is WriteNDJSON keeping only the events whose HLC is
// in rng (nil: all of them); the manifest records rng.
func WriteNDJSONRange(dst io.Writer, src Source, publicKey ed25519.PublicKey, rng *Range) (NDJSONManifest, error) {
	return WriteNDJSONWith(dst, src, NDJSONConfig{PublicKey: publicKey, Range: rng})
}

// WriteNDJSONWith verifies the bundle src and writes its events (those in
// cfg.Range, if set) to dst as NDJSON sorted by HLC total order (then
// seq, for an event id a crafted bundle holds twice), then the manifest
// line. Nothing is written to dst unless the whole bundle verified.
//
// Memory: cfg.RunBytes of lines and sort records, whatever the bundle's
// length; past it, sorted runs in temporary files (the lines and 41 to
// 50 bytes each: about the NDJSON's size; up to twice that while runs
// are merged into bigger ones, past ndjsonFanIn runs) and, while they are
// merged, a 64 KiB buffer and a line per run, at most ndjsonFanIn runs.
// Every run file is closed, so removed, before it returns; the package
// opens no file itself.
func WriteNDJSONWith(dst io.Writer, src Source, cfg NDJSONConfig) (NDJSONManifest, error) {
	rng := cfg.Range
	if rng != nil && rng.To.Less(rng.From) {
		return NDJSONManifest{}, fmt.Errorf("bundle: ndjson: range %s..%s ends before it starts", rng.From, rng.To)
	}
	s := newLineSorter(cfg)
	defer s.close()
	enc := newLineEncoder()
	var line []byte
	var kept uint64
	var head Head            // of the kept entry of greatest seq
	var lo, hi hlc.Timestamp // least and greatest kept HLC
	rep, err := Verify(io.NewSectionReader(src.R, 0, src.Size), VerifyConfig{PublicKey: cfg.PublicKey,
		OnEntry: func(e *Entry) error {
			se := e.Stored
			if rng != nil && !rng.Contains(se.HLC) {
				return nil
			}
			if kept == 0 || se.HLC.Less(lo) {
				lo = se.HLC
			}
			if kept == 0 || hi.Less(se.HLC) {
				hi = se.HLC
			}
			kept++
			head = Head{Seq: se.Seq, Link: se.Link}
			var err error
			if line, err = enc.appendLine(line[:0], se, &e.Prev); err != nil {
				return fmt.Errorf("ndjson: %w", err)
			}
			if len(line) > MaxNDJSONLineBytes {
				return fmt.Errorf("%w: the NDJSON line of event %s is %d bytes, over %d", ErrLimit, se.ID, len(line), MaxNDJSONLineBytes)
			}
			return s.add(lineRec{key: se.Key(), seq: se.Seq, line: line})
		}})
	if err != nil {
		return NDJSONManifest{}, fmt.Errorf("bundle: %s: %w", src.Name, err)
	}
	next, err := s.sorted()
	if err != nil {
		return NDJSONManifest{}, err
	}
	out := bufio.NewWriterSize(dst, writeBufferBytes)
	sum := sha256.New()
	for {
		r, ok, err := next()
		if err != nil {
			return NDJSONManifest{}, err
		}
		if !ok {
			break
		}
		sum.Write(r.line)
		if _, err := out.Write(r.line); err != nil {
			return NDJSONManifest{}, err
		}
	}
	m := rep.Manifest
	nm := NDJSONManifest{Format: NDJSONFormatName, Version: NDJSONVersion, Order: "hlc", BundleID: m.BundleID,
		Tenant: m.Tenant, CreatedAt: m.CreatedAt, CreatedBy: m.CreatedBy, Count: m.Count,
		FirstHLC: m.FirstHLC, LastHLC: m.LastHLC, ChainHead: m.ChainHead, Start: m.Start, Range: rng}
	if rng != nil {
		nm.Count, nm.FirstHLC, nm.LastHLC, nm.ChainHead = kept, lo, hi, head
		if kept == 0 {
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

// lineRec is one NDJSON line (newline included) and its sort key: in
// memory its line is in the sorter's arena; in a run, the line follows
// the key, seq and length.
type lineRec struct {
	key  fsm.EventKey
	seq  uint64
	line []byte
}

// byLine orders lines by HLC total order, then seq.
func byLine(a, b lineRec) int {
	if c := a.key.Compare(b.key); c != 0 {
		return c
	}
	return cmpUint(a.seq, b.seq)
}

func (r *lineRec) putRun(w *bufio.Writer) {
	var b [lineRunHeaderBytes + binary.MaxVarintLen64]byte
	h := r.key.HLC.AppendBinary(b[:0])
	h = append(h, r.key.ID[:]...)
	h = binary.LittleEndian.AppendUint64(h, r.seq)
	w.Write(binary.AppendUvarint(h, uint64(len(r.line))))
	w.Write(r.line)
}

// getRun reads a record putRun wrote, its line into r.line's array
// (grown as needed, up to MaxNDJSONLineBytes).
func (r *lineRec) getRun(br *bufio.Reader) error {
	b, err := peekRecord(br, lineRunHeaderBytes+1)
	if err != nil {
		return err
	}
	r.key.HLC = hlc.Timestamp{WallMs: int64(binary.LittleEndian.Uint64(b)), Logical: binary.LittleEndian.Uint32(b[8:]),
		Node: binary.LittleEndian.Uint32(b[12:])}
	copy(r.key.ID[:], b[16:32])
	r.seq = binary.LittleEndian.Uint64(b[32:])
	br.Discard(lineRunHeaderBytes)
	n, err := binary.ReadUvarint(br)
	switch {
	case err != nil:
		return io.ErrUnexpectedEOF
	case n > MaxNDJSONLineBytes:
		return fmt.Errorf("a line of %d bytes in a run, over %d", n, MaxNDJSONLineBytes)
	}
	if uint64(cap(r.line)) < n {
		r.line = make([]byte, n)
	}
	r.line = r.line[:n]
	if _, err := io.ReadFull(br, r.line); err != nil {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// lineSorter holds lines and their keys up to a byte bound, then spills
// them, sorted, to a run. A chain is mostly in HLC order already (only
// late events are not), so it keeps the lines that follow the last kept
// in order apart from the rest (late): only those are sorted, then the
// two merged, which costs a chain a tenth of a full sort and never more
// than one.
type lineSorter struct {
	runs    runSet[lineRec, *lineRec]
	inOrder []lineRec
	late    []lineRec
	arena   lineArena
	held    int // bytes of the records and their lines
	limit   int
}

func newLineSorter(cfg NDJSONConfig) *lineSorter {
	s := &lineSorter{limit: cfg.RunBytes, runs: runSet[lineRec, *lineRec]{newFile: cfg.NewRunFile, fanIn: ndjsonFanIn}}
	if s.limit <= 0 {
		s.limit = DefaultNDJSONRunBytes
	}
	return s
}

// add keeps r, copying its line.
func (s *lineSorter) add(r lineRec) error {
	n := len(r.line) + lineRecBytes
	if s.held+n > s.limit && s.held > 0 {
		if s.runs.newFile == nil {
			return fmt.Errorf("%w: more than NDJSONConfig.RunBytes (%d) of lines to sort, and no NDJSONConfig.NewRunFile to spill runs to", ErrLimit, s.limit)
		}
		slices.SortFunc(s.late, byLine)
		if err := s.runs.spillSorted([][]lineRec{s.inOrder, s.late}, byLine); err != nil {
			return err
		}
		clear(s.inOrder) // drop the lines too big for the arena
		clear(s.late)
		s.inOrder, s.late, s.held = s.inOrder[:0], s.late[:0], 0
		s.arena.reset()
	}
	r.line = s.arena.add(r.line)
	if k := len(s.inOrder); k == 0 || byLine(s.inOrder[k-1], r) < 0 {
		s.inOrder = append(s.inOrder, r)
	} else {
		s.late = append(s.late, r)
	}
	s.held += n
	return nil
}

// sorted returns an iterator over every line added, in byLine order: the
// runs in files and the lines still in memory merged.
func (s *lineSorter) sorted() (func() (lineRec, bool, error), error) {
	slices.SortFunc(s.late, byLine)
	return s.runs.merge(byLine, s.inOrder, s.late)
}

// close removes every run.
func (s *lineSorter) close() { s.runs.close() }

// lineArena keeps lines in arenaChunkBytes blocks, reused after a reset:
// one allocation per block rather than per line.
type lineArena struct {
	chunks [][]byte
	used   int    // chunks in use
	cur    []byte // the chunk being filled
}

// add returns a copy of line.
func (a *lineArena) add(line []byte) []byte {
	if len(line) > arenaChunkBytes/4 {
		return slices.Clone(line)
	}
	if cap(a.cur)-len(a.cur) < len(line) {
		if a.used == len(a.chunks) {
			a.chunks = append(a.chunks, make([]byte, 0, arenaChunkBytes))
		}
		a.cur = a.chunks[a.used][:0]
		a.used++
	}
	off := len(a.cur)
	a.cur = append(a.cur, line...)
	return a.cur[off:len(a.cur):len(a.cur)]
}

func (a *lineArena) reset() { a.used, a.cur = 0, nil }
