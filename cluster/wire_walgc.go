package cluster

import (
	"path/filepath"

	"github.com/strata-ledger/strata/cluster/walgc"
)

// startWALGC runs the NodeWAL's compaction rounds (cluster/walgc): records
// that reached the tier and are in a Raft snapshot on this node are
// dropped every wal_compact_interval.
func (n *Node) startWALGC() error {
	gc, err := walgc.New(walgc.Config{
		WAL: n.wal, Coverage: n.pipe, Interval: n.cfg.WALCompactInterval,
		Applied:    n.ledger.AppliedIndex,
		Snapshot:   n.raft.SnapshotIndex,
		LedgerFile: filepath.Join(n.cfg.DataDir, "ledger.db"),
		OnFatal:    n.onFatal,
		Logger:     n.log.With("component", "walgc"),
		Registerer: n.reg,
	})
	if err != nil {
		return err
	}
	n.bg.Go(func() { gc.Run(n.ctx) })
	return nil
}
