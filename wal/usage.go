package wal

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/prometheus/client_golang/prometheus"
)

// Segments returns how many segments the log holds on disk (the active
// one included; a segment being prepared is not one yet).
func (w *WAL) Segments() int {
	w.segMu.Lock()
	defer w.segMu.Unlock()
	return len(w.segs)
}

// DiskBytes returns the size of every file in the WAL's directory:
// segments at their preallocated size, the next segment being prepared,
// the checkpoint. It is what the directory takes on disk, give or take a
// file system's blocks.
func (w *WAL) DiskBytes() (int64, error) {
	names, err := w.cfg.FS.ReadDir(w.cfg.Dir)
	if err != nil {
		return 0, fmt.Errorf("wal: disk usage of %s: %w", w.cfg.Dir, err)
	}
	var total int64
	for _, name := range names {
		f, err := w.cfg.FS.OpenRO(w.path(name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // compacted or renamed since the listing
		}
		if err != nil {
			return 0, fmt.Errorf("wal: disk usage: open %s: %w", name, err)
		}
		size, err := f.Size()
		f.Close()
		if err != nil {
			return 0, fmt.Errorf("wal: disk usage: size of %s: %w", name, err)
		}
		total += size
	}
	return total, nil
}

// registerUsage registers the gauges of what the WAL holds on disk,
// computed when scraped: strata_wal_segments and strata_wal_disk_bytes.
func (w *WAL) registerUsage(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	segments := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "strata_wal_segments",
		Help: "Segments of the NodeWAL on disk, the active one included (compaction removes the others once their records are COMPACTED).",
	}, func() float64 { return float64(w.Segments()) })
	disk := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "strata_wal_disk_bytes",
		Help: "Bytes of every file in the NodeWAL's directory: preallocated segments, the next segment being prepared, the checkpoint.",
	}, func() float64 {
		n, err := w.DiskBytes()
		if err != nil {
			w.log.Warn("wal disk usage", "err", err)
			return 0
		}
		return float64(n)
	})
	for _, c := range []prometheus.Collector{segments, disk} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("wal: register metrics (one WAL per registerer): %w", err)
		}
	}
	return nil
}
