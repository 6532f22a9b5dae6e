package progress

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
)

// Keys gives the registration key of a worker. The manager implements it
// from its registrations; it must be safe to call from the receiver's fold
// goroutine and must not call into the Receiver. A key shorter than
// MinKeyBytes counts as no key.
type Keys interface {
	Key(worker string, keyID uint32) ([]byte, bool)
}

// UpdateView is a decoded update whose Workflow and Histogram point into
// the Decoder's buffers: valid until the next Open.
type UpdateView struct {
	Workflow  []byte
	Fence     uint64
	Completed uint64
	Failed    uint64
	Histogram []uint64
}

// Update copies v into an Update that owns its memory.
func (v *UpdateView) Update() Update {
	u := Update{Workflow: string(v.Workflow), Fence: v.Fence, Completed: v.Completed, Failed: v.Failed}
	if len(v.Histogram) > 0 {
		u.Histogram = append(Histogram(nil), v.Histogram...)
	}
	return u
}

// MaxCachedSenders bounds the Decoder's cache of MAC states, one per
// worker; it is cleared when full.
const MaxCachedSenders = 4096

// macState is the cached HMAC of one worker under one key.
type macState struct {
	worker string
	keyID  uint32
	key    []byte
	mac    hash.Hash
}

// Decoder verifies and reads frames without allocating in the steady
// state. Not safe for concurrent use.
type Decoder struct {
	keys    Keys
	senders map[string]*macState
	sum     []byte
	ids     []byte // arena for reconstructed workflow ids
	hists   []uint64
	views   []UpdateView
}

// NewDecoder returns a decoder that looks keys up in keys.
func NewDecoder(keys Keys) *Decoder {
	return &Decoder{keys: keys, senders: make(map[string]*macState), sum: make([]byte, 0, sha256.Size)}
}

// Decode verifies frame and returns a copy of its contents.
func (d *Decoder) Decode(frame []byte) (Frame, error) {
	h, views, err := d.Open(frame)
	if err != nil {
		return Frame{}, err
	}
	f := Frame{Header: h, Updates: make([]Update, len(views))}
	for i := range views {
		f.Updates[i] = views[i].Update()
	}
	return f, nil
}

// Open checks frame's header, looks up the worker's key, verifies the MAC
// and then decodes every update; the frame is refused whole or accepted
// whole. The views are valid until the next Open; the error wraps
// ErrMalformed, ErrUnknownWorker or ErrBadMAC.
func (d *Decoder) Open(frame []byte) (Header, []UpdateView, error) {
	if len(frame) < minFrameBytes || len(frame) > LimitMaxFrameBytes {
		return Header{}, nil, fmt.Errorf("%w: %d bytes", ErrMalformed, len(frame))
	}
	if frame[offVersion] != Version || frame[offFlags] != 0 {
		return Header{}, nil, fmt.Errorf("%w: version %d flags %#x", ErrMalformed, frame[offVersion], frame[offFlags])
	}
	wlen := int(frame[offWorkerLen])
	body := offWorker + wlen + countBytes
	if wlen == 0 || wlen > MaxWorkerBytes || body+MACBytes > len(frame) {
		return Header{}, nil, fmt.Errorf("%w: worker id length %d", ErrMalformed, wlen)
	}
	ms, err := d.sender(frame[offWorker:offWorker+wlen], binary.LittleEndian.Uint32(frame[offKeyID:]))
	if err != nil {
		return Header{}, nil, err
	}
	end := len(frame) - MACBytes
	ms.mac.Reset()
	ms.mac.Write(frame[:end])
	d.sum = ms.mac.Sum(d.sum[:0])
	if !hmac.Equal(d.sum[:MACBytes], frame[end:]) {
		return Header{}, nil, fmt.Errorf("%w: worker %s key %d", ErrBadMAC, ms.worker, ms.keyID)
	}
	h := Header{KeyID: ms.keyID, Seq: binary.LittleEndian.Uint64(frame[offSeq:]), Worker: ms.worker}
	views, err := d.updates(frame[body-countBytes : end])
	if err != nil {
		return Header{}, nil, fmt.Errorf("worker %s seq %d: %w", h.Worker, h.Seq, err)
	}
	return h, views, nil
}

// sender returns the MAC state for (worker, keyID), asking Keys every time
// so that a revoked or rotated key takes effect at once.
func (d *Decoder) sender(worker []byte, keyID uint32) (*macState, error) {
	ms := d.senders[string(worker)]
	name := ""
	if ms != nil {
		name = ms.worker
	} else {
		name = string(worker)
	}
	key, ok := d.keys.Key(name, keyID)
	if !ok || len(key) < MinKeyBytes {
		return nil, fmt.Errorf("%w: worker %q key %d", ErrUnknownWorker, name, keyID)
	}
	if ms != nil && ms.keyID == keyID && bytes.Equal(ms.key, key) {
		return ms, nil
	}
	if ms == nil && len(d.senders) >= MaxCachedSenders {
		clear(d.senders)
	}
	k := append([]byte(nil), key...)
	ms = &macState{worker: name, keyID: keyID, key: k, mac: hmac.New(sha256.New, k)}
	d.senders[name] = ms
	return ms, nil
}

// updates decodes the count and the updates of a verified frame: b runs
// from the count to the MAC.
func (d *Decoder) updates(b []byte) ([]UpdateView, error) {
	count := int(binary.LittleEndian.Uint16(b))
	b = b[countBytes:]
	if count > len(b)/minUpdateBytes {
		return nil, fmt.Errorf("%w: %d updates in %d bytes", ErrMalformed, count, len(b))
	}
	d.views = d.views[:0]
	d.ids = d.ids[:0]
	d.hists = d.hists[:0]
	r := reader{b: b}
	prevOff, prevLen := 0, 0
	for i := range count {
		prefix := r.uvarint()
		suffix := r.uvarint()
		if r.bad || prefix > uint64(prevLen) || suffix == 0 || prefix+suffix > MaxWorkflowBytes || suffix > uint64(len(r.b)) {
			return nil, fmt.Errorf("%w: update %d: id prefix %d suffix %d", ErrMalformed, i, prefix, suffix)
		}
		off := len(d.ids)
		d.ids = append(d.ids, d.ids[prevOff:prevOff+int(prefix)]...)
		d.ids = append(d.ids, r.b[:suffix]...)
		r.b = r.b[suffix:]
		id := d.ids[off:]
		if i > 0 && bytes.Compare(id, d.ids[prevOff:prevOff+prevLen]) <= 0 {
			return nil, fmt.Errorf("%w: update %d: workflow ids not strictly increasing", ErrMalformed, i)
		}
		v := UpdateView{Workflow: id, Fence: r.uvarint(), Completed: r.uvarint(), Failed: r.uvarint()}
		if err := d.histogram(&r, &v); err != nil {
			return nil, fmt.Errorf("update %d: %w", i, err)
		}
		prevOff, prevLen = off, len(id)
		d.views = append(d.views, v)
	}
	if r.bad || len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(r.b))
	}
	// Point the views at the arena only now: appends may have moved it.
	off := 0
	for i := range d.views {
		n := len(d.views[i].Workflow)
		d.views[i].Workflow = d.ids[off : off+n : off+n]
		off += n
	}
	hoff := 0
	for i := range d.views {
		n := len(d.views[i].Histogram)
		if n > 0 {
			d.views[i].Histogram = d.hists[hoff : hoff+n : hoff+n]
		}
		hoff += n
	}
	return d.views, nil
}

// histogram reads an update's histogram into the arena: a bucket count n,
// and if n > 0 the first bucket and n uvarint counts, the first and the
// last of them non-zero.
func (d *Decoder) histogram(r *reader, v *UpdateView) error {
	n := int(r.byte())
	if n == 0 {
		return r.err()
	}
	first := int(r.byte())
	if r.bad || first+n > HistogramBuckets {
		return fmt.Errorf("%w: histogram buckets %d..%d", ErrMalformed, first, first+n)
	}
	start := len(d.hists)
	for range first {
		d.hists = append(d.hists, 0)
	}
	for range n {
		d.hists = append(d.hists, r.uvarint())
	}
	h := d.hists[start:]
	if r.bad || h[first] == 0 || h[len(h)-1] == 0 {
		return fmt.Errorf("%w: histogram not trimmed or cut short", ErrMalformed)
	}
	v.Histogram = h
	return nil
}

// reader reads uvarints and bytes, remembering the first failure.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.bad = true
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) err() error {
	if r.bad {
		return fmt.Errorf("%w: cut short", ErrMalformed)
	}
	return nil
}
