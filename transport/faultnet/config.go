package faultnet

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Sentinel errors callers branch on.
var (
	// ErrPartitioned is returned by dials to, and operations on connections
	// with, a peer that a Partition rule cuts off.
	ErrPartitioned = errors.New("faultnet: peer is partitioned")
	// ErrInvalidRule is returned when a rule names no peer or carries a
	// duration outside [0, MaxDelay].
	ErrInvalidRule = errors.New("faultnet: invalid rule")
	// ErrInvalidConfig is returned by Config.Validate.
	ErrInvalidConfig = errors.New("faultnet: invalid config")
)

// Limits.
const (
	// MaxDelay bounds every delay, jitter and WAN latency: a fault that holds
	// bytes longer than this is a partition and should be modelled as one.
	MaxDelay = time.Minute
	// DefaultMaxQueuedBytesPerConn bounds the delayed bytes one connection
	// holds. Raft's AppendEntries can carry several MiB; 16 MiB leaves room
	// for a few of them in flight.
	DefaultMaxQueuedBytesPerConn = 16 << 20
	// DefaultMaxDelayedPackets bounds the datagrams held for delay at once.
	DefaultMaxDelayedPackets = 4096
	// flushGrace bounds how long Close keeps flushing delayed bytes to a peer
	// that has stopped reading.
	flushGrace = 5 * time.Second
)

// Config configures a Faults. The zero value is usable: every field has a
// default.
type Config struct {
	// PeerKey maps a network address ("host:port", or a bare host) to the
	// key rules are stored under. Default HostKey.
	PeerKey func(addr string) string
	// RegionOf returns the region of a peer key, or "" if unknown. Peers
	// whose known region differs from LocalRegion get the WAN latency. Nil:
	// no peer is remote. It is called on the write path while a WAN latency
	// is set, so it must be cheap and safe for concurrent use.
	RegionOf func(peer string) string
	// LocalRegion is the region of this node.
	LocalRegion string
	// WANLatency is the initial latency added towards remote peers
	// (--wan-latency). Changeable with SetWANLatency.
	WANLatency time.Duration
	// Seed seeds the jitter source. Tests print it.
	Seed uint64
	// MaxQueuedBytesPerConn bounds the delayed bytes one connection holds.
	// Default DefaultMaxQueuedBytesPerConn.
	MaxQueuedBytesPerConn int
	// MaxDelayedPackets bounds the datagrams held for delay at once. Default
	// DefaultMaxDelayedPackets.
	MaxDelayedPackets int
	// Logger receives rule changes (Info) and dropped traffic (Debug).
	// Default: discard.
	Logger *slog.Logger
	// Registerer receives the strata_transport_faults_* counters. Nil: the
	// counters are kept but not exported.
	Registerer prometheus.Registerer
	// Clock is the physical clock the clock-skew fault (Rules.ClockOffset)
	// shifts; the node's HLC reads it. Nil: a Clock of the Faults' own,
	// which nothing reads.
	Clock *Clock
}

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() Config {
	if c.PeerKey == nil {
		c.PeerKey = HostKey
	}
	if c.MaxQueuedBytesPerConn == 0 {
		c.MaxQueuedBytesPerConn = DefaultMaxQueuedBytesPerConn
	}
	if c.MaxDelayedPackets == 0 {
		c.MaxDelayedPackets = DefaultMaxDelayedPackets
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first field of c that is out of range.
func (c Config) Validate() error {
	if err := checkDuration("wan latency", c.WANLatency); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if c.MaxQueuedBytesPerConn < 0 {
		return fmt.Errorf("%w: max queued bytes per conn %d < 0", ErrInvalidConfig, c.MaxQueuedBytesPerConn)
	}
	if c.MaxDelayedPackets < 0 {
		return fmt.Errorf("%w: max delayed packets %d < 0", ErrInvalidConfig, c.MaxDelayedPackets)
	}
	return nil
}

// checkDuration reports a duration outside [0, MaxDelay].
func checkDuration(what string, d time.Duration) error {
	if d < 0 || d > MaxDelay {
		return fmt.Errorf("%s %v outside [0, %v]", what, d, MaxDelay)
	}
	return nil
}

// HostKey is the default peer key: the host of "host:port", or addr itself
// when it carries no port.
func HostKey(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
