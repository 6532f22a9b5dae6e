package fsm

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/strata-ledger/strata/hlc"
)

// The binary encodings of this package are built from these primitives
// (fsm/DESIGN.md, "Binary encoding"):
//
//	uvarint  unsigned LEB128 (encoding/binary), minimal length only
//	varint   zig-zag signed LEB128, minimal length only
//	u32      uvarint whose value fits in 32 bits
//	str      uvarint byte length, then the bytes
//	bool     one byte, 0 or 1
//	f64      IEEE 754 bits, 8 bytes little-endian
//	hlc      16 bytes: wall ms (8), logical (4), node (4), little-endian
//	id       16 bytes; hash 32 bytes
//
// Decoding is strict so that every accepted input is the encoding of what
// it decodes to: encode(decode(b)) == b. Equal values have equal bytes,
// which is what body hashes and duplicate detection rely on.

// encoder appends to b; the first failure sticks in err.
type encoder struct {
	b   []byte
	err error
}

func (e *encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) u32(v uint32)     { e.b = binary.AppendUvarint(e.b, uint64(v)) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) id(v EventID)     { e.b = append(e.b, v[:]...) }
func (e *encoder) hash(v Hash)      { e.b = append(e.b, v[:]...) }
func (e *encoder) hlc(t hlc.Timestamp) {
	e.b = t.AppendBinary(e.b)
}

func (e *encoder) boolean(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

func (e *encoder) f64(v float64) {
	e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v))
}

// str appends s, failing if it is longer than max (the decoder's bound).
func (e *encoder) str(field, s string, max int) {
	if len(s) > max {
		e.fail(&LimitError{Field: field, Limit: max, Got: len(s)})
		return
	}
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
}

// count appends a slice length, failing if it is over max.
func (e *encoder) count(field string, n, max int) {
	if n > max {
		e.fail(&LimitError{Field: field, Limit: max, Got: n})
		return
	}
	e.uvarint(uint64(n))
}

// reader decodes from b; the first failure sticks in err and every later
// read returns a zero value. s, when not empty, holds the same bytes as b
// as one string: decoded strings are then slices of it, so decoding a
// batch costs one string allocation instead of one per field.
type reader struct {
	b   []byte
	s   string
	off int
	err error
	// body is the encoded body of the last event read (event).
	body []byte
}

// newReader returns a reader over b whose strings share one copy of b.
func newReader(b []byte) reader { return reader{b: b, s: string(b)} }

// sub returns a reader over the next n bytes (checked by the caller).
func (r *reader) sub(n int) reader {
	sr := reader{b: r.b[r.off : r.off+n]}
	if r.s != "" {
		sr.s = r.s[r.off : r.off+n]
	}
	return sr
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at offset %d", ErrMalformed, what, r.off)
	}
}

func (r *reader) failErr(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *reader) rest() int { return len(r.b) - r.off }

// need reports whether n more bytes are available, failing if not.
func (r *reader) need(what string, n int) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || n > r.rest() {
		r.fail(what + ": truncated")
		return false
	}
	return true
}

// done fails unless every byte was consumed.
func (r *reader) done(what string) {
	if r.err == nil && r.off != len(r.b) {
		r.fail(fmt.Sprintf("%s: %d trailing bytes", what, len(r.b)-r.off))
	}
}

func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail(what + ": bad varint")
		return 0
	}
	if n != uvarintLen(v) {
		r.fail(what + ": non-minimal varint")
		return 0
	}
	r.off += n
	return v
}

func (r *reader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.fail(what + ": bad varint")
		return 0
	}
	zz := uint64(v<<1) ^ uint64(v>>63)
	if n != uvarintLen(zz) {
		r.fail(what + ": non-minimal varint")
		return 0
	}
	r.off += n
	return v
}

func (r *reader) u32(what string) uint32 {
	v := r.uvarint(what)
	if v > math.MaxUint32 {
		r.fail(what + ": over 32 bits")
		return 0
	}
	return uint32(v)
}

func (r *reader) boolean(what string) bool {
	if !r.need(what, 1) {
		return false
	}
	c := r.b[r.off]
	if c > 1 {
		r.fail(what + ": bool not 0 or 1")
		return false
	}
	r.off++
	return c == 1
}

func (r *reader) f64(what string) float64 {
	if !r.need(what, 8) {
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b[r.off:]))
	r.off += 8
	return v
}

func (r *reader) hlc(what string) hlc.Timestamp {
	if !r.need(what, hlc.EncodedLen) {
		return hlc.Timestamp{}
	}
	t, err := hlc.DecodeBinary(r.b[r.off:])
	if err != nil {
		r.fail(what + ": " + err.Error())
		return hlc.Timestamp{}
	}
	r.off += hlc.EncodedLen
	return t
}

func (r *reader) id(what string) (v EventID) {
	if r.need(what, len(v)) {
		r.off += copy(v[:], r.b[r.off:])
	}
	return v
}

func (r *reader) hash(what string) (v Hash) {
	if r.need(what, len(v)) {
		r.off += copy(v[:], r.b[r.off:])
	}
	return v
}

// str reads a string of at most max bytes, checking the bound and the
// input before allocating.
func (r *reader) str(what string, max int) string {
	n := r.uvarint(what)
	if r.err != nil {
		return ""
	}
	if n > uint64(max) {
		r.failErr(&LimitError{Field: what, Limit: max, Got: int(min(n, math.MaxInt32))})
		return ""
	}
	if !r.need(what, int(n)) {
		return ""
	}
	var s string
	if r.s != "" {
		s = r.s[r.off : r.off+int(n)]
	} else {
		s = string(r.b[r.off : r.off+int(n)])
	}
	r.off += int(n)
	return s
}

// count reads a slice length of at most max elements, each taking at least
// minBytes of input, so the caller may allocate count elements.
func (r *reader) count(what string, max, minBytes int) int {
	n := r.uvarint(what)
	if r.err != nil {
		return 0
	}
	if n > uint64(max) {
		r.failErr(&LimitError{Field: what, Limit: max, Got: int(min(n, math.MaxInt32))})
		return 0
	}
	if int(n)*minBytes > r.rest() {
		r.fail(what + ": count exceeds input")
		return 0
	}
	return int(n)
}
