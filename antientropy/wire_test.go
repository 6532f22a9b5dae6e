package antientropy

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/internal/golden"
)

// goldenRequest and goldenPage are the examples of FORMAT.md.
func goldenRequest() Request {
	return Request{Depth: 3, Nodes: []uint32{1, 4, 6}, Leaves: []LeafCursor{{Bucket: 2}, {Bucket: 5, After: "use1-1704931200000-gate42-00001"}}}
}

func goldenPage() Page {
	var h1, h2 Hash
	h1[0], h2[31] = 0x01, 0xff
	return Page{Depth: 3, Hashes: []Hash{h1, h2}, Leaves: []LeafItems{
		{Bucket: 2, Items: []Item{{ID: "use1-1704931200000-gate42-00001", Hash: ItemHash("use1-1704931200000-gate42-00001", goldenDigest())}}},
		{Bucket: 5},
	}}
}

// goldenDigest is the digest of FORMAT.md's item hash example: bytes
// 00 01 … 1f.
func goldenDigest() (d [32]byte) {
	for i := range d {
		d[i] = byte(i)
	}
	return d
}

func TestFormat_GoldenRequestMatchesFORMAT(t *testing.T) {
	q := goldenRequest()
	got, err := q.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want := golden.Bytes(t, "FORMAT.md", "request")
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded request\n% x\nFORMAT.md says\n% x", got, want)
	}
	var back Request
	if err := back.UnmarshalBinary(want); err != nil || !reflect.DeepEqual(back, q) {
		t.Fatalf("decoded golden request %+v, %v", back, err)
	}
}

func TestFormat_GoldenPageMatchesFORMAT(t *testing.T) {
	p := goldenPage()
	got, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want := golden.Bytes(t, "FORMAT.md", "page")
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded page\n% x\nFORMAT.md says\n% x", got, want)
	}
	var back Page
	if err := back.UnmarshalBinary(want); err != nil || !reflect.DeepEqual(back, p) {
		t.Fatalf("decoded golden page %+v, %v", back, err)
	}
}

// TestFormat_GoldenHashesMatchFORMAT pins the item hash and the bucket
// function to FORMAT.md's example.
func TestFormat_GoldenHashesMatchFORMAT(t *testing.T) {
	const id = "use1-1704931200000-gate42-00001"
	h := ItemHash(id, goldenDigest())
	if want := golden.Bytes(t, "FORMAT.md", "itemhash"); !bytes.Equal(h[:], want) {
		t.Fatalf("ItemHash = %s, FORMAT.md says %s", hex.EncodeToString(h[:]), hex.EncodeToString(want))
	}
	want, err := strconv.ParseUint(strings.TrimSpace(golden.Block(t, "FORMAT.md", "bucket", "")), 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	if got := BucketOf(id, DefaultDepth); uint64(got) != want {
		t.Fatalf("BucketOf(%s, %d) = %d, FORMAT.md says %d", id, DefaultDepth, got, want)
	}
}

// TestWire_LargestMessagesFitTheLimit: a request and a page at every
// limit, with the longest ids, encode within MaxMessageBytes and decode.
func TestWire_LargestMessagesFitTheLimit(t *testing.T) {
	long := strings.Repeat("z", MaxIDBytes)
	q := Request{Depth: MaxDepth}
	for i := range MaxNodesPerPage {
		q.Nodes = append(q.Nodes, uint32(1<<MaxDepth+i*(1<<MaxDepth/MaxNodesPerPage)))
	}
	for i := range MaxLeavesPerRequest {
		q.Leaves = append(q.Leaves, LeafCursor{Bucket: uint32(i * (1 << MaxDepth / MaxLeavesPerRequest)), After: long})
	}
	p := Page{Depth: MaxDepth, Hashes: make([]Hash, MaxNodesPerPage)}
	for i := range MaxLeavesPerRequest {
		l := LeafItems{Bucket: uint32(i * (1 << MaxDepth / MaxLeavesPerRequest))}
		for j := range MaxItemsPerPage / MaxLeavesPerRequest {
			l.Items = append(l.Items, Item{ID: long[:MaxIDBytes-1] + string(rune('a'+j))})
		}
		p.Leaves = append(p.Leaves, l)
	}
	qb, err := q.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	pb, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("largest request %d bytes, page %d bytes", len(qb), len(pb))
	if len(qb) > MaxMessageBytes || len(pb) > MaxMessageBytes {
		t.Fatalf("request %d, page %d bytes, limit %d", len(qb), len(pb), MaxMessageBytes)
	}
	var q2 Request
	var p2 Page
	if err := q2.UnmarshalBinary(qb); err != nil || !reflect.DeepEqual(q, q2) {
		t.Fatalf("request round trip: %v", err)
	}
	if err := p2.UnmarshalBinary(pb); err != nil || !reflect.DeepEqual(p, p2) {
		t.Fatalf("page round trip: %v", err)
	}
}

// TestWire_RejectsMalformed: every byte the format forbids is refused,
// before anything is allocated for a count the bytes cannot hold.
func TestWire_RejectsMalformed(t *testing.T) {
	req, _ := (&Request{Depth: 3, Nodes: []uint32{1}}).MarshalBinary()
	page, _ := (&Page{Depth: 3, Hashes: []Hash{{}}}).MarshalBinary()
	edit := func(b []byte, i int, v byte) []byte { c := bytes.Clone(b); c[i] = v; return c }
	tests := []struct {
		name string
		data []byte
		page bool
	}{
		{"empty", nil, false},
		{"other version", edit(req, 0, 2), false},
		{"page read as request", page, false},
		{"request read as page", req, true},
		{"depth 0", edit(req, 2, 0), false},
		{"depth above MaxDepth", edit(req, 2, MaxDepth+1), false},
		{"node 0", edit(req, 4, 0), false},
		{"node below the leaves", edit(req, 4, 16), false},
		{"node count above the bytes", edit(req, 3, 100), false},
		{"trailing byte", append(bytes.Clone(req), 0), false},
		{"truncated", req[:len(req)-1], false},
		{"non-minimal uvarint", []byte{1, 'Q', 3, 0x81, 0x00, 0}, false},
		{"node count above the limit", append([]byte{1, 'Q', 3}, 0x81, 0x40), false},
		{"nodes out of order", []byte{1, 'Q', 3, 2, 2, 0, 0}, false},
		{"bucket above the leaves", []byte{1, 'Q', 3, 0, 1, 8, 0}, false},
		{"hash count above the bytes", edit(page, 3, 2), true},
		{"page truncated", page[:10], true},
		{"leaf flags", []byte{1, 'P', 3, 0, 1, 0, 2, 0}, true},
		{"more without items", []byte{1, 'P', 3, 0, 1, 0, 1, 0}, true},
		{"empty id", append([]byte{1, 'P', 3, 0, 1, 0, 0, 1, 0}, make([]byte, 32)...), true},
		{"too large", append(bytes.Clone(req), make([]byte, MaxMessageBytes)...), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.page {
				err = new(Page).UnmarshalBinary(tt.data)
			} else {
				err = new(Request).UnmarshalBinary(tt.data)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Unmarshal(% x) = %v, want ErrMalformed", tt.data[:min(len(tt.data), 16)], err)
			}
		})
	}
}

// TestWire_EncodersRefuseWhatDecodersRefuse: a message the decoder would
// refuse is never encoded.
func TestWire_EncodersRefuseWhatDecodersRefuse(t *testing.T) {
	reqs := []Request{
		{Depth: 0},
		{Depth: 3, Nodes: []uint32{0}},
		{Depth: 3, Nodes: []uint32{2, 2}},
		{Depth: 3, Nodes: []uint32{16}},
		{Depth: 3, Leaves: []LeafCursor{{Bucket: 8}}},
		{Depth: 3, Leaves: []LeafCursor{{Bucket: 2}, {Bucket: 2}}},
		{Depth: 3, Nodes: make([]uint32, MaxNodesPerPage+1)},
	}
	for i, q := range reqs {
		if _, err := q.MarshalBinary(); !errors.Is(err, ErrMalformed) {
			t.Errorf("request %d: %v, want ErrMalformed", i, err)
		}
	}
	pages := []Page{
		{Depth: 25},
		{Depth: 3, Leaves: []LeafItems{{Bucket: 1, More: true}}},
		{Depth: 3, Leaves: []LeafItems{{Bucket: 1, Items: []Item{{ID: "b"}, {ID: "a"}}}}},
		{Depth: 3, Leaves: []LeafItems{{Bucket: 1, Items: []Item{{ID: ""}}}}},
		{Depth: 3, Leaves: []LeafItems{{Bucket: 1, Items: make([]Item, MaxItemsPerPage+1)}}},
	}
	for i, p := range pages {
		if _, err := p.MarshalBinary(); !errors.Is(err, ErrMalformed) {
			t.Errorf("page %d: %v, want ErrMalformed", i, err)
		}
	}
}
