package faultnet

import (
	"context"
	"fmt"
	"net"
	"time"
)

// WrapConn subjects c to the rules of peer (a key, see PeerOf). If peer is
// partitioned, c is closed and the error wraps ErrPartitioned.
func (f *Faults) WrapConn(c net.Conn, peer string) (*Conn, error) {
	fc := newConn(f, c, peer)
	if !f.register(fc) {
		_ = c.Close()
		f.metrics.cutConns.Inc()
		return nil, fmt.Errorf("connection with %s: %w", peer, ErrPartitioned)
	}
	return fc, nil
}

// Dial dials addr with dial unless its peer is partitioned, and wraps the
// connection. A dial to a partitioned peer blocks until ctx is done, as a
// dial into a black hole would, then fails with ErrPartitioned.
func (f *Faults) Dial(ctx context.Context, addr string, dial func(context.Context) (net.Conn, error)) (net.Conn, error) {
	peer := f.PeerOf(addr)
	if f.IsPartitioned(peer) {
		f.metrics.refusedDials.Inc()
		<-ctx.Done()
		return nil, fmt.Errorf("dial %s: %w", addr, ErrPartitioned)
	}
	c, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	return f.WrapConn(c, peer)
}

// Listener accepts connections subject to the rules: connections from a
// partitioned peer are closed as soon as they are accepted.
type Listener struct {
	net.Listener
	f *Faults
}

// WrapListener returns l subject to the rules of f.
func (f *Faults) WrapListener(l net.Listener) *Listener {
	return &Listener{Listener: l, f: f}
}

// Accept returns the next connection from a peer that is not partitioned.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		peer := l.f.PeerOf(c.RemoteAddr().String())
		fc, err := l.f.WrapConn(c, peer)
		if err != nil {
			l.f.log.Debug("fault: refused connection", "peer", peer)
			continue
		}
		return fc, nil
	}
}

// SendPacket sends the datagram b to addr with send, subject to the rules:
// dropped if the peer is partitioned, sent now if it has no delay, else
// copied and sent by a timer after the delay — unless by then the peer is
// partitioned, or MaxDelayedPackets datagrams were already waiting. Delayed
// datagrams to one peer may be reordered by jitter, as UDP allows. A dropped
// datagram is not an error: the network loses datagrams silently.
func (f *Faults) SendPacket(addr string, b []byte, send func([]byte) error) error {
	peer := f.PeerOf(addr)
	if f.IsPartitioned(peer) {
		f.metrics.droppedPackets.Inc()
		return nil
	}
	d := f.nextDelay(peer)
	if d == 0 {
		return send(b)
	}
	if f.delayedPackets.Add(1) > int64(f.cfg.MaxDelayedPackets) {
		f.delayedPackets.Add(-1)
		f.metrics.droppedPackets.Inc()
		return nil
	}
	f.metrics.delayedWrites.Inc()
	buf := append([]byte(nil), b...)
	time.AfterFunc(d, func() {
		defer f.delayedPackets.Add(-1)
		if f.IsPartitioned(peer) {
			f.metrics.droppedPackets.Inc()
			return
		}
		if err := send(buf); err != nil {
			f.log.Debug("fault: delayed datagram not sent", "peer", peer, "err", err)
		}
	})
	return nil
}

// AcceptPacket reports whether a datagram from addr may be delivered; it
// counts the ones a partition drops.
func (f *Faults) AcceptPacket(from string) bool {
	if f.IsPartitioned(f.PeerOf(from)) {
		f.metrics.droppedPackets.Inc()
		return false
	}
	return true
}
