package raftnet

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/strata-ledger/strata/transport/faultnet"
)

// FaultyStreamLayer is a raft.StreamLayer whose connections obey the rules
// of a faultnet.Faults: see that package for what each rule does. Raft sees
// only slow, failing or closed connections.
type FaultyStreamLayer struct {
	inner  raft.StreamLayer
	faults *faultnet.Faults
	ln     *faultnet.Listener

	// stop cancels dials hanging on a partitioned peer when the layer closes.
	stop      context.Context
	stopFn    context.CancelFunc
	closeOnce sync.Once
	closeErr  error
}

var _ raft.StreamLayer = (*FaultyStreamLayer)(nil)

// WithFaults wraps inner so that its traffic obeys f.
func WithFaults(inner raft.StreamLayer, f *faultnet.Faults) *FaultyStreamLayer {
	stop, stopFn := context.WithCancel(context.Background())
	return &FaultyStreamLayer{
		inner:  inner,
		faults: f,
		ln:     f.WrapListener(inner),
		stop:   stop,
		stopFn: stopFn,
	}
}

// Accept returns the next connection from a peer that is not partitioned.
func (s *FaultyStreamLayer) Accept() (net.Conn, error) { return s.ln.Accept() }

// Close closes the inner layer and releases dials waiting on a partition.
func (s *FaultyStreamLayer) Close() error {
	s.closeOnce.Do(func() {
		s.stopFn()
		s.closeErr = s.inner.Close()
	})
	return s.closeErr
}

// Addr returns the inner layer's advertise address.
func (s *FaultyStreamLayer) Addr() net.Addr { return s.inner.Addr() }

// Dial dials through the inner layer unless the peer is partitioned, in
// which case it blocks for timeout and fails with faultnet.ErrPartitioned.
func (s *FaultyStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := withOptionalTimeout(s.stop, timeout)
	defer cancel()
	return s.faults.Dial(ctx, string(address), func(ctx context.Context) (net.Conn, error) {
		if d, ok := s.inner.(interface {
			DialContext(context.Context, string) (net.Conn, error)
		}); ok {
			return d.DialContext(ctx, string(address))
		}
		return s.inner.Dial(address, timeout)
	})
}
