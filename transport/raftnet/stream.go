// Package raftnet carries hashicorp/raft's NetworkTransport over TCP, with
// optional TLS, and optionally through the fault layer of package faultnet.
//
// One StreamLayer serves one Raft group: a node that runs several groups
// opens one listener per group, each on its own address. Build the Raft
// transport with raft.NewNetworkTransportWithConfig, setting Stream to a
// *StreamLayer, or to WithFaults(layer, faults) in tests and fault-injection
// runs.
//
// Dials leave from the IP the layer listens on (when it is a specific IP), so
// a peer can tell which node an inbound connection comes from; faultnet relies
// on this to apply a node's rules to connections it did not dial.
//
// With TLS, one *tls.Config serves both ends: its Certificates are presented
// to peers, RootCAs verify servers and ClientCAs (with ClientAuth) verify
// clients. When it names no ServerName, a dial verifies the peer's
// certificate against the host of the address it dials. Clients handshake
// inside Dial, bounded by the dial timeout; servers on the first Read or
// Write, bounded by Config.HandshakeTimeout, so a slow client never stalls
// Accept.
//
// A StreamLayer may be used from any goroutine. Close stops accepting; it
// does not close connections already handed to Raft, which owns them.
package raftnet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Sentinel errors.
var (
	// ErrInvalidConfig is returned by Config.Validate.
	ErrInvalidConfig = errors.New("raftnet: invalid config")
)

// DefaultHandshakeTimeout bounds a server-side TLS handshake.
const DefaultHandshakeTimeout = 5 * time.Second

// Config configures a StreamLayer.
type Config struct {
	// ListenAddr is the "host:port" to listen on; port 0 picks a free port.
	ListenAddr string
	// AdvertiseAddr is the "ip:port" peers dial, when it differs from the
	// listen address (NAT, 0.0.0.0). It must be a specific IP.
	AdvertiseAddr string
	// TLS, if not nil, wraps every connection in TLS (see the package doc).
	TLS *tls.Config
	// HandshakeTimeout bounds a server-side TLS handshake. Default
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// Logger is the layer's logger. Default: discard.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first invalid field of c.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.ListenAddr); err != nil {
		return fmt.Errorf("%w: listen address %q: %w", ErrInvalidConfig, c.ListenAddr, err)
	}
	if c.AdvertiseAddr != "" {
		if _, err := advertisable(c.AdvertiseAddr); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	if c.HandshakeTimeout < 0 {
		return fmt.Errorf("%w: handshake timeout %v < 0", ErrInvalidConfig, c.HandshakeTimeout)
	}
	return nil
}

// advertisable resolves addr and checks that peers can dial it.
func advertisable(addr string) (*net.TCPAddr, error) {
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("advertise address %q: %w", addr, err)
	}
	if a.IP == nil || a.IP.IsUnspecified() {
		return nil, fmt.Errorf("advertise address %q is not a specific IP", addr)
	}
	return a, nil
}

// StreamLayer is a raft.StreamLayer over TCP, optionally TLS.
type StreamLayer struct {
	cfg       Config
	ln        net.Listener
	advertise *net.TCPAddr
	dialer    net.Dialer
}

var _ raft.StreamLayer = (*StreamLayer)(nil)

// Listen opens the listener of a StreamLayer.
func Listen(cfg Config) (*StreamLayer, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("raftnet: listen on %s: %w", cfg.ListenAddr, err)
	}
	s := &StreamLayer{cfg: cfg, ln: ln}
	bound := ln.Addr().(*net.TCPAddr)
	if !bound.IP.IsUnspecified() {
		s.dialer.LocalAddr = &net.TCPAddr{IP: bound.IP}
	}
	advertise := cfg.AdvertiseAddr
	if advertise == "" {
		advertise = bound.String()
	}
	if s.advertise, err = advertisable(advertise); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("raftnet: listen on %s: %w", cfg.ListenAddr, err)
	}
	return s, nil
}

// Accept returns the next inbound connection; with TLS, its handshake runs
// on first use.
func (s *StreamLayer) Accept() (net.Conn, error) {
	c, err := s.ln.Accept()
	if err != nil {
		return nil, err
	}
	if s.cfg.TLS == nil {
		return c, nil
	}
	return &serverConn{Conn: tls.Server(c, s.cfg.TLS), timeout: s.cfg.HandshakeTimeout}, nil
}

// Close stops accepting connections.
func (s *StreamLayer) Close() error { return s.ln.Close() }

// Addr returns the address peers dial: the advertise address.
func (s *StreamLayer) Addr() net.Addr { return s.advertise }

// Dial connects to a Raft peer, completing the TLS handshake, all within
// timeout (0: no limit).
func (s *StreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := withOptionalTimeout(context.Background(), timeout)
	defer cancel()
	return s.DialContext(ctx, string(address))
}

// DialContext connects to a Raft peer at addr, completing the TLS handshake,
// before ctx is done.
func (s *StreamLayer) DialContext(ctx context.Context, addr string) (net.Conn, error) {
	c, err := s.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("raftnet: dial %s: %w", addr, err)
	}
	if s.cfg.TLS == nil {
		return c, nil
	}
	tc := tls.Client(c, clientConfig(s.cfg.TLS, addr))
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("raftnet: tls handshake with %s: %w", addr, err)
	}
	return tc, nil
}

// clientConfig returns cfg, naming the dialed host as the server to verify
// when cfg names none.
func clientConfig(cfg *tls.Config, addr string) *tls.Config {
	if cfg.ServerName != "" {
		return cfg
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return cfg
	}
	c := cfg.Clone()
	c.ServerName = host
	return c
}

func withOptionalTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// serverConn is an accepted TLS connection whose handshake runs, bounded by
// timeout, on its first Read or Write rather than inside Accept.
type serverConn struct {
	*tls.Conn
	timeout time.Duration
	once    sync.Once
	err     error
}

func (c *serverConn) handshake() error {
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		defer cancel()
		if err := c.Conn.HandshakeContext(ctx); err != nil {
			c.err = fmt.Errorf("raftnet: tls handshake with %s: %w", c.RemoteAddr(), err)
		}
	})
	return c.err
}

// Read completes the handshake, then reads.
func (c *serverConn) Read(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

// Write completes the handshake, then writes.
func (c *serverConn) Write(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}
