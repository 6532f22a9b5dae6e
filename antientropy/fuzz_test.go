package antientropy

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzDecodeRequest: the decoder never panics, and what it accepts
// encodes back to the same bytes and decodes to the same value.
func FuzzDecodeRequest(f *testing.F) {
	q := goldenRequest()
	b, _ := q.MarshalBinary()
	f.Add(b)
	f.Add([]byte{1, 'Q', 3, 1, 1, 0})
	f.Add([]byte{1, 'Q', 24, 0, 1, 0x80, 0x80, 0x80, 0x08, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var q Request
		if q.UnmarshalBinary(data) != nil {
			return
		}
		again, err := q.MarshalBinary()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("decoded %+v re-encodes to % x, %v", q, again, err)
		}
		var q2 Request
		if err := q2.UnmarshalBinary(again); err != nil || !reflect.DeepEqual(q, q2) {
			t.Fatalf("round trip %+v → %+v, %v", q, q2, err)
		}
	})
}

// FuzzDecodePage: as FuzzDecodeRequest, for Pages.
func FuzzDecodePage(f *testing.F) {
	p := goldenPage()
	b, _ := p.MarshalBinary()
	f.Add(b)
	f.Add([]byte{1, 'P', 3, 0, 1, 0, 1, 1, 1, 'a'})
	f.Fuzz(func(t *testing.T, data []byte) {
		var p Page
		if p.UnmarshalBinary(data) != nil {
			return
		}
		again, err := p.MarshalBinary()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("decoded %+v re-encodes to % x, %v", p, again, err)
		}
		var p2 Page
		if err := p2.UnmarshalBinary(again); err != nil || !reflect.DeepEqual(p, p2) {
			t.Fatalf("round trip %+v → %+v, %v", p, p2, err)
		}
	})
}

// FuzzAnswer: a peer answers any request it can decode without
// panicking, with a page that encodes.
func FuzzAnswer(f *testing.F) {
	tr := treeWith(f, 3, 1, newLedger(40)) // every node below the root summed from a chunk
	q := goldenRequest()
	b, _ := q.MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		var q Request
		if q.UnmarshalBinary(data) != nil {
			return
		}
		p, err := Answer(tr, q)
		if err != nil {
			return
		}
		if _, err := p.MarshalBinary(); err != nil {
			t.Fatalf("Answer(%+v) gives a page that does not encode: %v", q, err)
		}
	})
}

// FuzzStep: a comparison fed any decodable page, at any point of its
// descent, never panics; it goes on or stops with an error.
func FuzzStep(f *testing.F) {
	a := newLedger(60)
	b := a.clone()
	b[jobID(3)] = digestOf(jobID(3), 1)
	delete(b, jobID(4))
	ta, tb := treeWith(f, 3, 2, a), treeOf(f, 3, b) // the local tree stores levels 0..1 only
	p := goldenPage()
	pb, _ := p.MarshalBinary()
	f.Add(uint8(0), pb)
	f.Add(uint8(3), pb)
	f.Fuzz(func(t *testing.T, honest uint8, data []byte) {
		var bad Page
		if bad.UnmarshalBinary(data) != nil {
			return
		}
		c := NewCompare(ta)
		req := c.Start()
		for range honest % 8 { // honest rounds first
			p, err := Answer(tb, req)
			if err != nil {
				t.Fatal(err)
			}
			var done bool
			if req, done, err = c.Step(p); err != nil {
				t.Fatal(err)
			}
			if done {
				return
			}
		}
		for range 4 {
			var done bool
			var err error
			if req, done, err = c.Step(bad); err != nil || done {
				return
			}
			_ = req
		}
	})
}
