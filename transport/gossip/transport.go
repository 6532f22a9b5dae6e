// Package gossip carries hashicorp/memberlist through the fault layer of
// package faultnet, and defines the node metadata every gate and manager
// gossips (DESIGN §1).
//
// Transport wraps memberlist.NetTransport — UDP datagrams for probes and
// gossip, TCP streams for push/pull and fallback probes — and puts every
// datagram and stream through a faultnet.Faults, so that partitioning a node
// cuts its gossip as it cuts its Raft traffic:
//
//   - Outbound datagrams go through Faults.SendPacket: dropped while the peer
//     is partitioned, else sent now or, under a delay, copied and sent by a
//     timer when due (dropped if the peer is partitioned by then, or if
//     faultnet.Config.MaxDelayedPackets datagrams already wait). Jitter may
//     reorder delayed datagrams, as UDP may.
//   - Inbound datagrams from a partitioned peer are dropped before memberlist
//     sees them; they are attributed by source address, which for memberlist
//     is the sender's gossip address.
//   - Streams, both dialed and accepted, are faultnet.Conns: cut by a
//     partition, delayed in order. Dials leave from the bind IP so that peers
//     can attribute them.
//
// With a nil Faults the transport adds nothing but that source binding.
//
// After a heal: memberlist neither probes nor push/pulls with a node it holds
// dead; it only gossips still-pending broadcasts to it for
// GossipToTheDeadTime. A partition longer than a few gossip rounds therefore
// leaves both sides holding each other dead until one of them calls Join
// again; the cluster runs a reconnect loop for that, as Serf does.
//
// A Transport is used by one memberlist.Memberlist; its methods may be called
// from any goroutine. It does not encrypt: use memberlist's keyring.
package gossip

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/strata-ledger/strata/transport/faultnet"
)

// ErrInvalidConfig is returned by TransportConfig.Validate.
var ErrInvalidConfig = errors.New("gossip: invalid config")

// TransportConfig configures a Transport.
type TransportConfig struct {
	// BindAddr is the IP to listen on, TCP and UDP.
	BindAddr string
	// BindPort is the port, TCP and UDP; 0 picks a free one.
	BindPort int
	// Faults, if not nil, applies its rules to all traffic.
	Faults *faultnet.Faults
	// Logger receives memberlist's transport errors. Default: discard.
	Logger *slog.Logger
}

// Validate reports the first invalid field of c.
func (c TransportConfig) Validate() error {
	if net.ParseIP(c.BindAddr) == nil {
		return fmt.Errorf("%w: bind address %q is not an IP", ErrInvalidConfig, c.BindAddr)
	}
	if c.BindPort < 0 || c.BindPort > 65535 {
		return fmt.Errorf("%w: bind port %d", ErrInvalidConfig, c.BindPort)
	}
	return nil
}

// Transport is a memberlist.NodeAwareTransport over UDP and TCP whose
// traffic obeys a faultnet.Faults.
type Transport struct {
	inner  *memberlist.NetTransport
	faults *faultnet.Faults
	dialer net.Dialer

	packetCh chan *memberlist.Packet
	streamCh chan net.Conn

	stop      context.Context // cancelled by Shutdown: releases hanging dials
	stopFn    context.CancelFunc
	innerDone chan struct{} // closed once inner has shut down
	pumps     sync.WaitGroup
	once      sync.Once
}

var _ memberlist.NodeAwareTransport = (*Transport)(nil)

// NewTransport binds the listeners of a Transport.
func NewTransport(cfg TransportConfig) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	inner, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{cfg.BindAddr},
		BindPort:  cfg.BindPort,
		Logger:    slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	})
	if err != nil {
		return nil, fmt.Errorf("gossip: listen on %s:%d: %w", cfg.BindAddr, cfg.BindPort, err)
	}
	stop, stopFn := context.WithCancel(context.Background())
	t := &Transport{
		inner:     inner,
		faults:    cfg.Faults,
		stop:      stop,
		stopFn:    stopFn,
		innerDone: make(chan struct{}),
	}
	if ip := net.ParseIP(cfg.BindAddr); !ip.IsUnspecified() {
		t.dialer.LocalAddr = &net.TCPAddr{IP: ip}
	}
	if t.faults != nil {
		t.packetCh = make(chan *memberlist.Packet)
		t.streamCh = make(chan net.Conn)
		t.pumps.Add(2)
		go t.pumpPackets()
		go t.pumpStreams()
	}
	return t, nil
}

// Port returns the bound port (useful with BindPort 0).
func (t *Transport) Port() int { return t.inner.GetAutoBindPort() }

// FinalAdvertiseAddr implements memberlist.Transport.
func (t *Transport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	return t.inner.FinalAdvertiseAddr(ip, port)
}

// WriteTo implements memberlist.Transport.
func (t *Transport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress sends a datagram, subject to the rules. The time returned
// is when it was handed to the fault layer, so an injected delay shows in
// memberlist's round-trip measurements.
func (t *Transport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	if t.faults == nil {
		return t.inner.WriteToAddress(b, a)
	}
	now := time.Now()
	err := t.faults.SendPacket(a.Addr, b, func(p []byte) error {
		_, err := t.inner.WriteToAddress(p, a)
		return err
	})
	return now, err
}

// PacketCh implements memberlist.Transport.
func (t *Transport) PacketCh() <-chan *memberlist.Packet {
	if t.faults == nil {
		return t.inner.PacketCh()
	}
	return t.packetCh
}

// DialTimeout implements memberlist.Transport.
func (t *Transport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// DialAddressTimeout opens a stream to a peer, subject to the rules: a dial
// to a partitioned peer blocks for timeout and fails.
func (t *Transport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(t.stop, timeout)
	defer cancel()
	dial := func(ctx context.Context) (net.Conn, error) {
		c, err := t.dialer.DialContext(ctx, "tcp", a.Addr)
		if err != nil {
			return nil, fmt.Errorf("gossip: dial %s: %w", a.String(), err)
		}
		return c, nil
	}
	if t.faults == nil {
		return dial(ctx)
	}
	return t.faults.Dial(ctx, a.Addr, dial)
}

// StreamCh implements memberlist.Transport.
func (t *Transport) StreamCh() <-chan net.Conn {
	if t.faults == nil {
		return t.inner.StreamCh()
	}
	return t.streamCh
}

// Shutdown closes the listeners and stops the pumps. While the inner
// transport shuts down, the pumps keep draining it (discarding), so its
// listener goroutines never block on a channel nobody reads.
func (t *Transport) Shutdown() error {
	var err error
	t.once.Do(func() {
		t.stopFn()
		err = t.inner.Shutdown()
		close(t.innerDone)
		t.pumps.Wait()
	})
	return err
}

// pumpPackets forwards inbound datagrams from peers that are not partitioned.
func (t *Transport) pumpPackets() {
	defer t.pumps.Done()
	in := t.inner.PacketCh()
	for {
		select {
		case p := <-in:
			if !t.faults.AcceptPacket(p.From.String()) {
				continue
			}
			select {
			case t.packetCh <- p:
			case <-t.stop.Done():
			}
		case <-t.innerDone:
			return
		}
	}
}

// pumpStreams forwards inbound streams from peers that are not partitioned,
// wrapped so that the rules keep applying to them.
func (t *Transport) pumpStreams() {
	defer t.pumps.Done()
	in := t.inner.StreamCh()
	for {
		select {
		case c := <-in:
			fc, err := t.faults.WrapConn(c, t.faults.PeerOf(c.RemoteAddr().String()))
			if err != nil {
				continue // partitioned: WrapConn closed it
			}
			select {
			case t.streamCh <- fc:
			case <-t.stop.Done():
				_ = fc.Close()
			}
		case <-t.innerDone:
			return
		}
	}
}
