package antientropy

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Wire constants (FORMAT.md). Never change them; add a version instead.
const (
	// Version is the wire version of Requests and Pages.
	Version = 1
	// kindRequest and kindPage are the second byte of an encoding, so a
	// page is never read as a request or the other way round.
	kindRequest = 'Q'
	kindPage    = 'P'
)

// Limits, checked by the encoders and by the decoders before they
// allocate. With them a Request or a Page is at most MaxMessageBytes.
const (
	// MaxNodesPerPage bounds the node hashes asked in a Request and
	// returned in a Page (128 KiB of hashes).
	MaxNodesPerPage = 4096
	// MaxLeavesPerRequest bounds the leaves asked in a Request, and so
	// the leaves of a Page.
	MaxLeavesPerRequest = 2048
	// MaxItemsPerPage bounds the items (job id, item hash) of a Page, over
	// all its leaves; a larger leaf is sent over several pages.
	MaxItemsPerPage = 2048
	// MaxMessageBytes bounds an encoded Request or Page.
	MaxMessageBytes = 1 << 20
)

// ErrMalformed is returned, wrapped, by the decoders.
var ErrMalformed = errors.New("antientropy: malformed message")

// Request asks a peer for the hashes of some nodes and the items of some
// leaves of its tree. Answer computes the Page that answers it.
type Request struct {
	Depth  int          // the asker's tree depth; the peer's must be equal
	Nodes  []uint32     // nodes whose hash is asked, strictly ascending
	Leaves []LeafCursor // leaves whose items are asked, buckets strictly ascending
}

// LeafCursor asks for the items of a bucket whose id is above After ("":
// from the first).
type LeafCursor struct {
	Bucket uint32
	After  string
}

// Page answers a Request: one hash per requested node, in order, and the
// items of a prefix of the requested leaves (the rest did not fit and are
// asked again).
type Page struct {
	Depth  int
	Hashes []Hash
	Leaves []LeafItems
}

// LeafItems are the items of one bucket above the cursor asked, in id
// order. More says the bucket has items after the last one sent.
type LeafItems struct {
	Bucket uint32
	More   bool
	Items  []Item
}

// MarshalBinary encodes r (FORMAT.md, "Request").
func (r *Request) MarshalBinary() ([]byte, error) {
	if err := checkDepth(r.Depth); err != nil {
		return nil, err
	}
	if len(r.Nodes) > MaxNodesPerPage || len(r.Leaves) > MaxLeavesPerRequest {
		return nil, fmt.Errorf("%w: %d nodes, %d leaves", ErrMalformed, len(r.Nodes), len(r.Leaves))
	}
	b := make([]byte, 0, 3+binary.MaxVarintLen32*(2+len(r.Nodes)+2*len(r.Leaves)))
	b = append(b, Version, kindRequest, byte(r.Depth))
	b = binary.AppendUvarint(b, uint64(len(r.Nodes)))
	var prev uint32
	for _, n := range r.Nodes {
		if n <= prev || n>>(r.Depth+1) != 0 {
			return nil, fmt.Errorf("%w: node %d after %d at depth %d", ErrMalformed, n, prev, r.Depth)
		}
		b = binary.AppendUvarint(b, uint64(n-prev))
		prev = n
	}
	b = binary.AppendUvarint(b, uint64(len(r.Leaves)))
	next := uint32(0) // the least bucket allowed next
	for _, l := range r.Leaves {
		if l.Bucket < next || l.Bucket>>r.Depth != 0 || len(l.After) > MaxIDBytes {
			return nil, fmt.Errorf("%w: leaf %d (cursor %d bytes) at depth %d", ErrMalformed, l.Bucket, len(l.After), r.Depth)
		}
		b = binary.AppendUvarint(b, uint64(l.Bucket-next))
		next = l.Bucket + 1
		b = binary.AppendUvarint(b, uint64(len(l.After)))
		b = append(b, l.After...)
	}
	return b, nil
}

// MarshalBinary encodes p (FORMAT.md, "Page").
func (p *Page) MarshalBinary() ([]byte, error) {
	if err := checkDepth(p.Depth); err != nil {
		return nil, err
	}
	if len(p.Hashes) > MaxNodesPerPage || len(p.Leaves) > MaxLeavesPerRequest {
		return nil, fmt.Errorf("%w: %d hashes, %d leaves", ErrMalformed, len(p.Hashes), len(p.Leaves))
	}
	b := make([]byte, 0, 3+binary.MaxVarintLen32*2+32*len(p.Hashes))
	b = append(b, Version, kindPage, byte(p.Depth))
	b = binary.AppendUvarint(b, uint64(len(p.Hashes)))
	for _, h := range p.Hashes {
		b = append(b, h[:]...)
	}
	b = binary.AppendUvarint(b, uint64(len(p.Leaves)))
	next, items := uint32(0), 0
	for _, l := range p.Leaves {
		if l.Bucket < next || l.Bucket>>p.Depth != 0 || (l.More && len(l.Items) == 0) {
			return nil, fmt.Errorf("%w: leaf %d (more %v, %d items) at depth %d", ErrMalformed, l.Bucket, l.More, len(l.Items), p.Depth)
		}
		if items += len(l.Items); items > MaxItemsPerPage {
			return nil, fmt.Errorf("%w: more than %d items", ErrMalformed, MaxItemsPerPage)
		}
		b = binary.AppendUvarint(b, uint64(l.Bucket-next))
		next = l.Bucket + 1
		var flags byte
		if l.More {
			flags = 1
		}
		b = append(b, flags)
		b = binary.AppendUvarint(b, uint64(len(l.Items)))
		prev := ""
		for i, it := range l.Items {
			if checkID(it.ID) != nil || (i > 0 && it.ID <= prev) {
				return nil, fmt.Errorf("%w: leaf %d item %d: id %q after %q", ErrMalformed, l.Bucket, i, it.ID, prev)
			}
			prev = it.ID
			b = binary.AppendUvarint(b, uint64(len(it.ID)))
			b = append(b, it.ID...)
			b = append(b, it.Hash[:]...)
		}
	}
	return b, nil
}

func checkDepth(d int) error {
	if d < MinDepth || d > MaxDepth {
		return fmt.Errorf("%w: depth %d, want %d..%d", ErrMalformed, d, MinDepth, MaxDepth)
	}
	return nil
}

// reader decodes; the first error sticks and later reads return zeros.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.fail("truncated")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// uvarint reads a uvarint of at most max.
func (r *reader) uvarint(what string, max uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("%s: bad uvarint", what)
		return 0
	}
	if n != len(binary.AppendUvarint(nil, v)) {
		r.fail("%s: uvarint not minimal", what)
		return 0
	}
	if v > max {
		r.fail("%s %d above %d", what, v, max)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a count of elements of at least minBytes each, at most max
// and at most what the remaining bytes can hold, before anything is
// allocated for them.
func (r *reader) count(what string, max, minBytes int) int {
	c := int(r.uvarint(what, uint64(max)))
	if r.err == nil && c*minBytes > len(r.b) {
		r.fail("%d %s in %d bytes", c, what, len(r.b))
		return 0
	}
	return c
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil || len(r.b) < n {
		r.fail("truncated")
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

func (r *reader) header(kind byte) int {
	if len(r.b) > MaxMessageBytes {
		r.fail("%d bytes, limit %d", len(r.b), MaxMessageBytes)
	}
	if v := r.byte(); r.err == nil && v != Version {
		r.fail("version %d, want %d", v, Version)
	}
	if k := r.byte(); r.err == nil && k != kind {
		r.fail("kind %q, want %q", k, kind)
	}
	d := int(r.byte())
	if r.err == nil {
		if err := checkDepth(d); err != nil {
			r.err = err
		}
	}
	return d
}

func (r *reader) end() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d trailing bytes", len(r.b))
	}
	return r.err
}

// UnmarshalBinary decodes a Request; it accepts only the canonical
// encoding, so MarshalBinary gives back the same bytes.
func (q *Request) UnmarshalBinary(data []byte) error {
	r := reader{b: data}
	*q = Request{Depth: r.header(kindRequest)}
	if n := r.count("nodes", MaxNodesPerPage, 1); n > 0 {
		q.Nodes = make([]uint32, n)
		limit := uint64(1) << (q.Depth + 1)
		var cur uint64
		for i := range q.Nodes {
			cur += r.uvarint("node delta", limit)
			if r.err == nil && (cur >= limit || (i > 0 && cur == uint64(q.Nodes[i-1])) || cur == 0) {
				r.fail("node %d at depth %d", cur, q.Depth)
			}
			q.Nodes[i] = uint32(cur)
		}
	}
	if n := r.count("leaves", MaxLeavesPerRequest, 2); n > 0 {
		q.Leaves = make([]LeafCursor, n)
		limit := uint64(1) << q.Depth
		var next uint64
		for i := range q.Leaves {
			b := next + r.uvarint("bucket delta", limit)
			if r.err == nil && b >= limit {
				r.fail("bucket %d at depth %d", b, q.Depth)
			}
			next = b + 1
			q.Leaves[i] = LeafCursor{Bucket: uint32(b), After: string(r.bytes(int(r.uvarint("cursor length", MaxIDBytes))))}
		}
	}
	if err := r.end(); err != nil {
		*q = Request{}
		return err
	}
	return nil
}

// UnmarshalBinary decodes a Page; it accepts only the canonical encoding.
func (p *Page) UnmarshalBinary(data []byte) error {
	r := reader{b: data}
	*p = Page{Depth: r.header(kindPage)}
	if n := r.count("hashes", MaxNodesPerPage, 32); n > 0 {
		p.Hashes = make([]Hash, n)
		for i := range p.Hashes {
			copy(p.Hashes[i][:], r.bytes(32))
		}
	}
	if n := r.count("leaves", MaxLeavesPerRequest, 3); n > 0 {
		p.Leaves = make([]LeafItems, n)
		limit := uint64(1) << p.Depth
		var next uint64
		items := 0
		for i := range p.Leaves {
			b := next + r.uvarint("bucket delta", limit)
			if r.err == nil && b >= limit {
				r.fail("bucket %d at depth %d", b, p.Depth)
			}
			next = b + 1
			l := &p.Leaves[i]
			l.Bucket = uint32(b)
			switch f := r.byte(); f {
			case 0:
			case 1:
				l.More = true
			default:
				r.fail("leaf %d: flags %#x", b, f)
			}
			c := r.count("items", MaxItemsPerPage-items, 1+1+32)
			items += c
			if r.err == nil && l.More && c == 0 {
				r.fail("leaf %d: more without items", b)
			}
			if c > 0 {
				l.Items = make([]Item, c)
			}
			for j := range l.Items {
				id := r.bytes(int(r.uvarint("id length", MaxIDBytes)))
				if r.err == nil && (len(id) == 0 || (j > 0 && string(id) <= l.Items[j-1].ID)) {
					r.fail("leaf %d item %d: id %q out of order", b, j, id)
				}
				l.Items[j].ID = string(id)
				copy(l.Items[j].Hash[:], r.bytes(32))
			}
		}
	}
	if err := r.end(); err != nil {
		*p = Page{}
		return err
	}
	return nil
}
