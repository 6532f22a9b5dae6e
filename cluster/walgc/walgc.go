// Package walgc keeps a node's NodeWAL bounded (issue 16 §2, DESIGN §5):
// on a schedule it advances the NodeWAL's APPLIED and COMPACTED watermarks
// as records reach their tier and this node's ledger state holds them,
// then removes the segments wholly at or below COMPACTED.
//
// The rule (commit/cover.go says why): a record may be dropped only when
//
//  1. it reached its tier — the Raft group of this node's ledger,
//     REGIONAL on a manager, GLOBAL on a gate — and the tier watermark in
//     the NodeWAL's checkpoint is at or beyond it, so Recover will never
//     look for it; a record acknowledged at NONE or LOCAL whose climb has
//     not reached the tier is never dropped, however old; and
//  2. the Raft entry that carried it is at or below the index of this
//     node's newest Raft snapshot on disk (complete and fsynced), or it
//     needs no entry (the tier refused it for good: its refusal is kept
//     in the refusal file).
//
// APPLIED is the same prefix with (2) read against this node's applied
// index instead: what its ledger already holds. COMPACTED ≤ APPLIED ≤ the
// tier watermark, always.
//
// Crash safety: COMPACTED is written to the checkpoint (fsynced, renamed)
// before any segment is removed, and it only ever names records already
// in a snapshot on disk; a crash between a snapshot and the watermark
// leaves more on disk than needed, never less, and the next round (at the
// next start) removes what the checkpoint allows. The NodeWAL keeps its own
// guard: it is opened with the tier watermark among its retained levels,
// so Compact can never pass the tier watermark whatever COMPACTED says.
//
// What it does not do: it does not take snapshots (Raft does, on its
// snapshot_threshold / snapshot_interval), and it does not decide where a
// record stands (the commit pipeline does).
package walgc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/wal"
)

// DefaultInterval is the time between two compaction rounds.
const DefaultInterval = 10 * time.Second

// Coverage says which NodeWAL records are durable at a Raft index:
// *commit.Pipeline.
type Coverage interface {
	// Covered returns the highest LSN at or below which every record
	// reached the tier (checkpointed) in an entry at or below index.
	Covered(index uint64) wal.LSN
	// Forget drops what is known of records at or below lsn.
	Forget(lsn wal.LSN)
}

// Config configures a GC. WAL, Coverage, Applied and Snapshot are
// required.
type Config struct {
	WAL      *wal.WAL
	Coverage Coverage
	// Applied returns this node's ledger's applied Raft index.
	Applied func() uint64
	// Snapshot returns the index of this node's newest Raft snapshot on
	// disk (0: none).
	Snapshot func() (uint64, error)
	// Interval between rounds; 0 is DefaultInterval.
	Interval time.Duration
	// LedgerFile is the ledger's bbolt file, whose size is exported as
	// strata_ledger_file_bytes ("" exports nothing).
	LedgerFile string
	// OnFatal is called when the NodeWAL stopped (a checkpoint or
	// directory fsync failed): the node must stop.
	OnFatal func(error)
	// Logger defaults to discarding; Registerer nil registers nothing.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// GC runs the compaction rounds of one NodeWAL.
type GC struct {
	cfg    Config
	rounds *prometheus.CounterVec
}

// New checks cfg and registers the metrics.
func New(cfg Config) (*GC, error) {
	if cfg.WAL == nil || cfg.Coverage == nil || cfg.Applied == nil || cfg.Snapshot == nil {
		return nil, errors.New("walgc: WAL, Coverage, Applied and Snapshot are required")
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Interval < 0 {
		return nil, fmt.Errorf("walgc: negative interval %s", cfg.Interval)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	g := &GC{cfg: cfg, rounds: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "strata_wal_compaction_rounds_total",
		Help: "NodeWAL compaction rounds by result: ok or error.",
	}, []string{"result"})}
	g.rounds.WithLabelValues("ok")
	g.rounds.WithLabelValues("error")
	if cfg.Registerer != nil {
		cs := []prometheus.Collector{g.rounds}
		if cfg.LedgerFile != "" {
			cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "strata_ledger_file_bytes",
				Help: "Size of the ledger's bbolt file.",
			}, func() float64 {
				fi, err := os.Stat(cfg.LedgerFile)
				if err != nil {
					return 0
				}
				return float64(fi.Size())
			}))
		}
		for _, c := range cs {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("walgc: register metrics: %w", err)
			}
		}
	}
	return g, nil
}

// Run does a round at once (what a crash left to remove), then one every
// Interval until ctx ends.
func (g *GC) Run(ctx context.Context) {
	t := time.NewTicker(g.cfg.Interval)
	defer t.Stop()
	for {
		if err := g.Once(); err != nil {
			g.cfg.Logger.Warn("nodewal compaction", "err", err)
			if errors.Is(err, wal.ErrStopped) {
				if g.cfg.OnFatal != nil {
					g.cfg.OnFatal(err)
				}
				return
			}
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// Once advances APPLIED and COMPACTED as far as the rule allows and
// removes the segments wholly at or below COMPACTED.
func (g *GC) Once() (err error) {
	defer func() {
		if err != nil {
			g.rounds.WithLabelValues("error").Inc()
		} else {
			g.rounds.WithLabelValues("ok").Inc()
		}
	}()
	w := g.cfg.WAL
	// Read the snapshot before the applied index: a snapshot is never
	// beyond what was applied when it was taken.
	snap, err := g.cfg.Snapshot()
	if err != nil {
		return err
	}
	applied := g.cfg.Applied()
	marks := w.Watermarks()
	a := max(g.cfg.Coverage.Covered(applied), marks.Get(wal.Applied))
	if a > marks.Get(wal.Applied) {
		if err := w.SetWatermark(wal.Applied, a); err != nil {
			return fmt.Errorf("walgc: APPLIED to %d: %w", a, err)
		}
	}
	c := max(min(g.cfg.Coverage.Covered(snap), a), marks.Get(wal.Compacted))
	if c > marks.Get(wal.Compacted) {
		if err := w.SetWatermark(wal.Compacted, c); err != nil {
			return fmt.Errorf("walgc: COMPACTED to %d: %w", c, err)
		}
	}
	// Compact even when COMPACTED did not move: a crash may have come
	// between the checkpoint and the removal.
	if err := w.Compact(); err != nil {
		return err
	}
	g.cfg.Coverage.Forget(c)
	return nil
}
