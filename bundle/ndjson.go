package bundle

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// NDJSON (FORMAT.md, "NDJSON"): one line per event in HLC total order,
// each {"seq", "prev_link", "link", "body_hash", "event"} (the chain's
// fields as in the bundle, so each line's link can be recomputed from the
// line alone), then a last line {"manifest": {...}} with the count and
// the SHA-256 of every byte before it. This file has the format and the
// verifier; ndjson_write.go the writer.

// NDJSONFormatName is the NDJSON manifest's "format".
const NDJSONFormatName = "strata-ndjson"

// NDJSONVersion is the NDJSON manifest's "version" written now; 2 added
// "start" and "range". VerifyNDJSON reads 1 and 2.
const NDJSONVersion = 2

// MaxNDJSONLineBytes bounds one NDJSON line: an event's JSON, whose body
// may be several times its binary form, and the chain fields.
const MaxNDJSONLineBytes = 1 << 20

// genesisText is the prev_link of the first event, in JSON.
const genesisText = "genesis"

// NDJSONManifest is the last line's "manifest". It repeats the source
// bundle's fields and adds the lines' digest; it is not signed (the
// binary bundle is the signed artifact).
type NDJSONManifest struct {
	Format    string        `json:"format"`
	Version   int           `json:"version"`
	Order     string        `json:"order"` // "hlc"
	BundleID  string        `json:"bundle_id"`
	Tenant    string        `json:"tenant"`
	CreatedAt string        `json:"created_at"`
	CreatedBy string        `json:"created_by"`
	Count     uint64        `json:"count"`
	FirstHLC  hlc.Timestamp `json:"first_hlc"`
	LastHLC   hlc.Timestamp `json:"last_hlc"`
	ChainHead Head          `json:"chain_head"`
	// SHA256 is the digest of every line before the manifest's, newlines
	// included.
	SHA256 fsm.Hash `json:"sha256"`
	// Start is the source bundle's (omitted: genesis). Range, when set,
	// says the lines are only the events of the bundle whose HLC is in
	// it: their seqs may then have gaps, and chain_head is the line of
	// the greatest seq.
	Start Head   `json:"start,omitzero"`
	Range *Range `json:"range,omitempty"`
}

type ndjsonLine struct {
	Seq      uint64    `json:"seq"`
	PrevLink string    `json:"prev_link"`
	Link     fsm.Hash  `json:"link"`
	BodyHash fsm.Hash  `json:"body_hash"`
	Event    fsm.Event `json:"event"`
}

type ndjsonLast struct {
	Manifest *NDJSONManifest `json:"manifest"`
}

// NDJSONReport is what VerifyNDJSON found.
type NDJSONReport struct {
	Manifest NDJSONManifest
	Lines    uint64
	Head     fsm.ChainHead
}

// ndjsonVerifier keeps, per line, its seq, previous link and link (72
// bytes a line) to check the chain's continuity once every line is read.
type ndjsonVerifier struct {
	r      *bufio.Reader
	sum    hash.Hash
	rep    NDJSONReport
	tenant string
	prev   fsm.EventKey
	first  hlc.Timestamp
	last   hlc.Timestamp
	chain  []ndjsonLink
	body   []byte
}

type ndjsonLink struct {
	seq        uint64
	prev, link fsm.Hash
}

// VerifyNDJSON reads NDJSON from r and checks: every line parses (strict
// JSON, bounded by MaxNDJSONLineBytes); lines are in strictly increasing
// HLC total order; one tenant; each line's body hash and link recompute
// from the line; the seqs are start+1..start+count, each once, and each
// prev_link is the link of seq-1 ("genesis" for 1; the manifest's start
// link for the first); the manifest line is last, and its count, sha256,
// chain head, first and last HLC match. With a range in the manifest the
// lines are a filter: every HLC in the range, seqs after start and
// distinct but with gaps allowed, prev_link checked where the seq before
// is a line too. The first failure is a *BreakError with Part PartLine
// (or PartManifest, PartFile). Memory: 72 bytes per line, at most
// MaxSortEntries lines.
func VerifyNDJSON(r io.Reader) (NDJSONReport, error) {
	v := ndjsonVerifier{r: bufio.NewReaderSize(r, 64<<10), sum: sha256.New()}
	err := v.run()
	return v.rep, err
}

func (v *ndjsonVerifier) run() error {
	for index := 0; ; index++ {
		line, err := v.line(index)
		if err != nil {
			return err
		}
		if bytes.HasPrefix(line, []byte(`{"manifest"`)) {
			return v.finish(line)
		}
		if err := v.verifyLine(index, line); err != nil {
			return err
		}
		v.sum.Write(line)
	}
}

// line reads one line, newline included.
func (v *ndjsonVerifier) line(index int) ([]byte, error) {
	var line []byte
	for {
		part, err := v.r.ReadSlice('\n')
		if len(line)+len(part) > MaxNDJSONLineBytes {
			return nil, brk(PartLine, index, "frame", fmt.Sprintf("line over %d bytes", MaxNDJSONLineBytes))
		}
		line = append(line, part...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(line) == 0 {
				return nil, brk(PartFile, -1, "truncated", fmt.Sprintf("ends after %d lines, before the manifest line", index))
			}
			return nil, brk(PartLine, index, "truncated", "the last line has no newline")
		default:
			return nil, fmt.Errorf("bundle: read line %d: %w", index, err)
		}
	}
}

func (v *ndjsonVerifier) verifyLine(index int, line []byte) error {
	var l ndjsonLine
	if err := decodeStrict(line, &l); err != nil {
		return brk(PartLine, index, "json", err.Error())
	}
	named := func(field, reason string) error {
		return &BreakError{Part: PartLine, Index: index, Seq: l.Seq, EventID: l.Event.ID, Field: field, Reason: reason}
	}
	if l.Event.Body == nil {
		return named("json", "no event body")
	}
	if index == 0 {
		v.tenant = l.Event.Tenant
	}
	key := l.Event.Key()
	switch {
	case index > 0 && !v.prev.Less(key):
		return named("order", fmt.Sprintf("HLC %s (event %s) does not follow HLC %s (event %s)", key.HLC, key.ID, v.prev.HLC, v.prev.ID))
	case l.Event.Tenant != v.tenant:
		return named("tenant", fmt.Sprintf("tenant %q in a chain of %q", l.Event.Tenant, v.tenant))
	case l.Seq == 0:
		return named("seq", "seq 0")
	case len(v.chain) >= MaxSortEntries:
		return named("frame", fmt.Sprintf("more than %d lines", MaxSortEntries))
	}
	var prev fsm.Hash
	switch {
	case l.Seq == 1 && l.PrevLink == genesisText:
	case l.Seq > 1 && prev.UnmarshalText([]byte(l.PrevLink)) == nil:
	default:
		return named("prev_link", fmt.Sprintf("prev_link %.80q for seq %d", l.PrevLink, l.Seq))
	}
	var err error
	if v.body, err = fsm.AppendBody(v.body[:0], l.Event.Body); err != nil {
		return named("body_hash", err.Error())
	}
	if fsm.Hash(sha256.Sum256(v.body)) != l.BodyHash {
		return named("body_hash", "the body does not match its hash")
	}
	if fsm.ChainLink(fsm.ChainHead{Seq: l.Seq - 1, Link: prev}, &l.Event, l.BodyHash) != l.Link {
		return named("link", "link does not match the one recomputed from the line")
	}
	v.chain = append(v.chain, ndjsonLink{seq: l.Seq, prev: prev, link: l.Link})
	if index == 0 || key.HLC.Less(v.first) {
		v.first = key.HLC
	}
	if index == 0 || v.last.Less(key.HLC) {
		v.last = key.HLC
	}
	v.prev = key
	v.rep.Lines++
	return nil
}

func (v *ndjsonVerifier) finish(line []byte) error {
	var last ndjsonLast
	if err := decodeStrict(line, &last); err != nil || last.Manifest == nil {
		return brk(PartManifest, -1, "json", fmt.Sprint("manifest line: ", err))
	}
	m := *last.Manifest
	v.rep.Manifest = m
	if n, _ := v.r.Read(make([]byte, 1)); n > 0 {
		return brk(PartFile, -1, "trailing", "data after the manifest line")
	}
	bad := func(field string, got, want any) error {
		return brk(PartManifest, -1, field, fmt.Sprintf("manifest says %v, the lines give %v", got, want))
	}
	var sum fsm.Hash
	v.sum.Sum(sum[:0])
	switch {
	case m.Format != NDJSONFormatName || m.Version < 1 || m.Version > NDJSONVersion || m.Order != "hlc":
		return bad("format", fmt.Sprintf("%s v%d order %s", m.Format, m.Version, m.Order), NDJSONFormatName)
	case m.Version == 1 && (m.Start != Head{} || m.Range != nil):
		return brk(PartManifest, -1, "version", "a version 1 manifest with version 2 fields")
	case m.SHA256 != sum:
		return bad("sha256", m.SHA256, sum)
	case m.Count != v.rep.Lines:
		return bad("count", m.Count, v.rep.Lines)
	case m.Count > 0 && m.Tenant != v.tenant:
		return bad("tenant", m.Tenant, v.tenant)
	case m.Start.Seq == 0 && m.Start.Link != fsm.Hash{}:
		return brk(PartManifest, -1, "start", "a start link without a start seq")
	case m.Range != nil && m.Range.To.Less(m.Range.From):
		return brk(PartManifest, -1, "range", fmt.Sprintf("range %s..%s ends before it starts", m.Range.From, m.Range.To))
	}
	if err := v.checkChain(m); err != nil {
		return err
	}
	head := Head{Seq: v.rep.Head.Seq, Link: v.rep.Head.Link}
	switch {
	case m.Range != nil && v.rep.Lines > 0 && !(m.Range.Contains(v.first) && m.Range.Contains(v.last)):
		return brk(PartManifest, -1, "range", fmt.Sprintf("lines of HLC %s..%s outside the range %s..%s", v.first, v.last, m.Range.From, m.Range.To))
	case m.ChainHead != head:
		return bad("chain_head", m.ChainHead, head)
	case m.FirstHLC != v.first:
		return bad("first_hlc", m.FirstHLC, v.first)
	case m.LastHLC != v.last:
		return bad("last_hlc", m.LastHLC, v.last)
	}
	return nil
}

// checkChain sorts the lines' links by seq and checks the chain: seqs
// after the manifest's start, each once, without gaps unless the lines
// are a range's; each prev_link the link of the seq before when that is
// a line, the start's link for seq start+1. It sets the report's head.
func (v *ndjsonVerifier) checkChain(m NDJSONManifest) error {
	slices.SortFunc(v.chain, func(a, b ndjsonLink) int { return cmpUint(a.seq, b.seq) })
	v.rep.Head = fsm.ChainHead{Seq: m.Start.Seq, Link: m.Start.Link}
	for i, l := range v.chain {
		want := v.rep.Head.Seq + 1
		switch {
		case l.seq < want:
			if i == 0 {
				return brk(PartLine, -1, "seq", fmt.Sprintf("seq %d, but the chain starts after seq %d", l.seq, m.Start.Seq))
			}
			return brk(PartLine, -1, "seq", fmt.Sprintf("seq %d twice", l.seq))
		case l.seq > want && m.Range == nil:
			return brk(PartLine, -1, "seq", fmt.Sprintf("no line of seq %d", want))
		case l.seq == want && l.prev != v.rep.Head.Link:
			return brk(PartLine, -1, "prev_link", fmt.Sprintf("seq %d's prev_link is not the link of seq %d", l.seq, want-1))
		}
		v.rep.Head = fsm.ChainHead{Seq: l.seq, Link: l.link}
	}
	return nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
