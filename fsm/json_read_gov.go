package fsm

import (
	"bytes"
	"encoding/json"
)

// govBody decodes the bodies of the governance extension (JobAdmitted,
// PolicySet, PolicyDeleted); nil and bad for any other type.
func (r *jsonReader) govBody(t EventType) Body {
	switch t {
	case TypeJobAdmitted:
		b := new(JobAdmitted)
		r.object(func(k []byte) int {
			f := field(k, "reason")
			if f == 0 {
				b.Reason = r.str(slotText)
			}
			return f
		})
		return b
	case TypePolicySet:
		b := new(PolicySet)
		r.object(func(k []byte) int {
			f := field(k, "kind", "key", "value", "reason", "ticket", "requestor")
			switch f {
			case 0:
				b.Kind = r.str(slotName)
			case 1:
				b.Key = r.str(slotText)
			case 2:
				b.Value = r.rawObject()
			case 3:
				b.Reason = r.str(slotText)
			case 4:
				b.Ticket = r.str(slotText)
			case 5:
				b.Requestor = r.str(slotText)
			}
			return f
		})
		return b
	case TypePolicyDeleted:
		b := new(PolicyDeleted)
		r.object(func(k []byte) int {
			f := field(k, "kind", "key", "reason", "ticket", "requestor")
			switch f {
			case 0:
				b.Kind = r.str(slotName)
			case 1:
				b.Key = r.str(slotText)
			case 2:
				b.Reason = r.str(slotText)
			case 3:
				b.Ticket = r.str(slotText)
			case 4:
				b.Requestor = r.str(slotText)
			}
			return f
		})
		return b
	}
	r.bad = true
	return nil
}

// rawObject reads an object as compact JSON (what PolicySet.UnmarshalJSON
// keeps); anything but an object leaves the subset.
func (r *jsonReader) rawObject() json.RawMessage {
	start := r.skipObject()
	if r.bad {
		return nil
	}
	var c bytes.Buffer
	if json.Compact(&c, r.b[start:r.i]) != nil {
		r.bad = true // encoding/json explains
		return nil
	}
	return c.Bytes()
}

// compactJSON returns b without insignificant whitespace (a copy), or b
// itself if it does not parse (validation then refuses it).
func compactJSON(b []byte) json.RawMessage {
	var c bytes.Buffer
	if json.Compact(&c, b) != nil {
		return append(json.RawMessage(nil), b...)
	}
	return c.Bytes()
}

// UnmarshalJSON reads a PolicySet and keeps its value as compact JSON,
// the canonical form the ledger stores (an indented client body and a
// compact one are the same change).
func (b *PolicySet) UnmarshalJSON(data []byte) error {
	type plain PolicySet
	var p plain
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields() // as every body: an unknown field is an error
	if err := d.Decode(&p); err != nil {
		return err
	}
	if p.Value != nil {
		p.Value = compactJSON(p.Value)
	}
	*b = PolicySet(p)
	return nil
}
