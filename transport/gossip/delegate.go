package gossip

import (
	"sync/atomic"

	"github.com/hashicorp/memberlist"
)

// MetaDelegate is a memberlist.Delegate that serves a node's encoded Meta
// and nothing else: no user messages, broadcasts or state exchange. Replace
// the metadata with SetMeta, then call Memberlist.UpdateNode to gossip it.
// Safe for concurrent use.
type MetaDelegate struct {
	encoded atomic.Pointer[[]byte] // never mutated once stored: memberlist keeps it
}

var _ memberlist.Delegate = (*MetaDelegate)(nil)

// NewMetaDelegate returns a delegate serving m, which must be valid.
func NewMetaDelegate(m Meta) (*MetaDelegate, error) {
	d := &MetaDelegate{}
	if err := d.SetMeta(m); err != nil {
		return nil, err
	}
	return d, nil
}

// SetMeta replaces the served metadata with m, which must be valid.
func (d *MetaDelegate) SetMeta(m Meta) error {
	b, err := m.AppendBinary(make([]byte, 0, MaxMetaBytes))
	if err != nil {
		return err
	}
	d.encoded.Store(&b)
	return nil
}

// Meta returns the served metadata.
func (d *MetaDelegate) Meta() Meta {
	m, err := DecodeMeta(*d.encoded.Load())
	if err != nil {
		panic("gossip: stored metadata does not decode: " + err.Error()) // SetMeta validated it
	}
	return m
}

// NodeMeta returns the encoded metadata; nil if it exceeds limit, which
// cannot happen with memberlist's limit (checked at compile time).
func (d *MetaDelegate) NodeMeta(limit int) []byte {
	b := *d.encoded.Load()
	if len(b) > limit {
		return nil
	}
	return b
}

// NotifyMsg ignores user messages: none are sent.
func (d *MetaDelegate) NotifyMsg([]byte) {}

// GetBroadcasts has nothing to broadcast.
func (d *MetaDelegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }

// LocalState has no state to exchange.
func (d *MetaDelegate) LocalState(join bool) []byte { return nil }

// MergeRemoteState ignores remote state: none is sent.
func (d *MetaDelegate) MergeRemoteState(buf []byte, join bool) {}
