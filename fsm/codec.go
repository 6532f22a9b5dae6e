package fsm

import (
	"encoding/binary"
	"fmt"
)

// Wire versions. Never change the meaning of a version: replicas and logs
// hold bytes written by older code. A new layout gets a new version and the
// decoder keeps reading the old ones.
const (
	// EventVersion is the first byte of an encoded event.
	EventVersion = 1
	// BatchVersion is the first byte of an encoded batch.
	BatchVersion = 1
)

// minEventBytes is the smallest encoded event: version, type, id, hlc,
// one-byte fence, four empty strings, body length.
const minEventBytes = 1 + 1 + 16 + 16 + 1 + 4 + 4

// minFrameBytes is the smallest batch frame: length and event.
const minFrameBytes = 4 + minEventBytes

// AppendBinary appends the binary encoding of e (fsm/DESIGN.md, "Event").
// It fails if the body is missing or of another type, or a field is over
// the bound its decoder enforces; it does not run Validate.
func (e *Event) AppendBinary(b []byte) ([]byte, error) { return e.appendBinary(b, nil) }

// appendBinary appends the encoding of e; body, if not nil, is the
// canonical encoding of e.Body (AppendBody), copied instead of encoding
// the body again.
func (e *Event) appendBinary(b, body []byte) ([]byte, error) {
	if e.Body == nil {
		return b, fieldErr("body", "missing")
	}
	if e.Body.EventType() != e.Type {
		return b, fieldErr("body", fmt.Sprintf("%s body in a %s event", e.Body.EventType(), e.Type))
	}
	enc := encoder{b: append(b, EventVersion, byte(e.Type))}
	enc.id(e.ID)
	enc.hlc(e.HLC)
	enc.uvarint(e.Fence)
	enc.str("job_id", e.JobID, MaxJobIDBytes)
	enc.str("tenant", e.Tenant, MaxNameBytes)
	enc.str("region", e.Region, MaxRegionBytes)
	enc.str("node", e.Node, MaxNameBytes)
	at := len(enc.b)
	enc.b = append(enc.b, 0, 0, 0, 0)
	if body != nil {
		enc.b = append(enc.b, body...)
	} else {
		var err error
		if enc.b, err = encodeBody(enc.b, e.Body); err != nil {
			enc.fail(err)
		}
	}
	n := len(enc.b) - at - 4
	if n > MaxEventBodyBytes {
		enc.fail(&LimitError{Field: "body", Limit: MaxEventBodyBytes, Got: n})
	}
	if enc.err != nil {
		return b, enc.err
	}
	binary.LittleEndian.PutUint32(enc.b[at:], uint32(n))
	return enc.b, nil
}

// MarshalBinary returns the binary encoding of e.
func (e *Event) MarshalBinary() ([]byte, error) { return e.AppendBinary(nil) }

// UnmarshalBinary decodes an event; see DecodeEvent.
func (e *Event) UnmarshalBinary(b []byte) error {
	d, err := DecodeEvent(b)
	if err != nil {
		return err
	}
	*e = d
	return nil
}

// AppendBody appends the canonical binary encoding of a body: the bytes the
// event encoding carries and the audit chain hashes.
func AppendBody(b []byte, body Body) ([]byte, error) {
	var enc encoder
	return enc.appendBody(b, body)
}

// appendBody is AppendBody with an encoder of the caller's. The
// interface call takes the encoder's address, which moves a local one to
// the heap: the applier keeps one and saves that allocation per event.
func (enc *encoder) appendBody(b []byte, body Body) ([]byte, error) {
	*enc = encoder{b: b}
	body.encode(enc)
	if n := len(enc.b) - len(b); n > MaxEventBodyBytes {
		enc.fail(&LimitError{Field: "body", Limit: MaxEventBodyBytes, Got: n})
	}
	out, err := enc.b, enc.err
	*enc = encoder{}
	if err != nil {
		return b, err
	}
	return out, nil
}

// encodeBody appends body's encoding to b, without the body size limit,
// with an encoder of its own: the interface call moves that encoder to
// the heap, and only when it is made, not the encoder of its caller.
func encodeBody(b []byte, body Body) ([]byte, error) {
	enc := encoder{b: b}
	body.encode(&enc)
	return enc.b, enc.err
}

// DecodeEvent decodes one encoded event, exactly: trailing bytes are an
// error. Lengths and counts are checked against the limits before anything
// is allocated. It does not run Validate.
func DecodeEvent(b []byte) (Event, error) {
	if len(b) > MaxEventBytes {
		return Event{}, &LimitError{Field: "event", Limit: MaxEventBytes, Got: len(b)}
	}
	r := newReader(b)
	e := r.event()
	r.done("event")
	if r.err != nil {
		return Event{}, fmt.Errorf("decode event: %w", r.err)
	}
	return e, nil
}

func (r *reader) fixed32(what string) uint32 {
	if !r.need(what, 4) {
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

func (r *reader) event() Event {
	var e Event
	if !r.need("event", 2) {
		return e
	}
	if v := r.b[r.off]; v != EventVersion {
		r.fail(fmt.Sprintf("event version %d", v))
		return e
	}
	e.Type = EventType(r.b[r.off+1])
	if !e.Type.Known() {
		r.fail(fmt.Sprintf("unknown event type %d", uint8(e.Type)))
		return e
	}
	r.off += 2
	e.ID = r.id("id")
	e.HLC = r.hlc("hlc")
	e.Fence = r.uvarint("fence")
	e.JobID = r.str("job_id", MaxJobIDBytes)
	e.Tenant = r.str("tenant", MaxNameBytes)
	e.Region = r.str("region", MaxRegionBytes)
	e.Node = r.str("node", MaxNameBytes)
	n := int(r.fixed32("body length"))
	if r.err == nil && n > MaxEventBodyBytes {
		r.failErr(&LimitError{Field: "body", Limit: MaxEventBodyBytes, Got: n})
	}
	if !r.need("body", n) {
		return e
	}
	body := newBody(e.Type)
	br := r.sub(n)
	body.decode(&br)
	br.done("body")
	if br.err != nil {
		r.failErr(fmt.Errorf("%s body: %w", e.Type, br.err))
		return e
	}
	r.body = r.b[r.off : r.off+n]
	r.off += n
	e.Body = body
	return e
}

// AppendBatch appends the encoding of a batch: many events in one Raft
// entry (fsm/DESIGN.md, "Batch"). It fails on more than MaxBatchEvents
// events, an encoding over MaxBatchBytes, or an event that does not encode.
func AppendBatch(b []byte, events []Event) ([]byte, error) {
	if len(events) > MaxBatchEvents {
		return b, &LimitError{Field: "batch events", Limit: MaxBatchEvents, Got: len(events)}
	}
	out := append(b, BatchVersion)
	out = binary.AppendUvarint(out, uint64(len(events)))
	for i := range events {
		at := len(out)
		out = append(out, 0, 0, 0, 0)
		var err error
		if out, err = events[i].AppendBinary(out); err != nil {
			return b, fmt.Errorf("encode batch event %d: %w", i, err)
		}
		binary.LittleEndian.PutUint32(out[at:], uint32(len(out)-at-4))
		if len(out)-len(b) > MaxBatchBytes {
			return b, &LimitError{Field: "batch bytes", Limit: MaxBatchBytes, Got: len(out) - len(b)}
		}
	}
	return out, nil
}

// EncodeBatch returns the encoding of a batch; see AppendBatch.
func EncodeBatch(events []Event) ([]byte, error) { return AppendBatch(nil, events) }

// DecodeBatch decodes a batch, all or nothing. The input size and the event
// count are checked before the event slice is allocated.
func DecodeBatch(b []byte) ([]Event, error) {
	events, _, err := decodeBatch(b, nil)
	return events, err
}

// decodeBatch is DecodeBatch that also returns each event's encoded body
// (slices of b, appended to bodies), so the ledger hashes bodies without
// encoding them again.
func decodeBatch(b []byte, bodies [][]byte) ([]Event, [][]byte, error) {
	if len(b) > MaxBatchBytes {
		return nil, bodies, &LimitError{Field: "batch bytes", Limit: MaxBatchBytes, Got: len(b)}
	}
	r := newReader(b)
	if !r.need("batch", 1) {
		return nil, bodies, fmt.Errorf("decode batch: %w", r.err)
	}
	if v := b[0]; v != BatchVersion {
		return nil, bodies, fmt.Errorf("decode batch: %w: version %d", ErrMalformed, v)
	}
	r.off = 1
	n := r.count("batch events", MaxBatchEvents, minFrameBytes)
	if r.err != nil {
		return nil, bodies, fmt.Errorf("decode batch: %w", r.err)
	}
	events := make([]Event, n)
	for i := range events {
		size := int(r.fixed32("frame length"))
		if !r.need("frame", size) {
			break
		}
		fr := r.sub(size)
		events[i] = fr.event()
		fr.done("event")
		if fr.err != nil {
			return nil, bodies, fmt.Errorf("decode batch event %d: %w", i, fr.err)
		}
		bodies = append(bodies, fr.body)
		r.off += size
	}
	r.done("batch")
	if r.err != nil {
		return nil, bodies, fmt.Errorf("decode batch: %w", r.err)
	}
	return events, bodies, nil
}
