// Package backup writes a group's scheduled backups (issue 15, DESIGN §11):
// on the group's leader, every interval, a snapshot of the ledger (the
// record stream, fsm.Ledger.SnapshotRecords: checksummed, with the ledger
// digest in its trailer), behind the envelope naming its group, index and
// term (envelope.go), is written atomically into a directory, unless the
// ledger's content is what the last backup holds; each is then proved by
// restoring it into a scratch store, which checks every checksum and
// recomputes the digest against the trailer, before it counts as good.
// The oldest are removed beyond Retain. A directory is the interface:
// syncing it to object storage is the operator's tool's job.
//
// "Unchanged" is judged on content, not on the applied index: the
// group's leader proposes a checkpoint mark every replica round
// (cluster/replica), and a mark advances the applied index without
// changing anything else, so an index test wrote and proved a full
// backup of an idle cluster every interval. The content is the record
// stream between its header (which holds the index) and its CRC (which
// covers the header): the same state gives the same bytes
// (SnapshotRecords), so equal SHA-256s of that range mean an equal
// ledger, whatever the marks. The stream is hashed as it is written, so
// an unchanged backup costs one read of the ledger into a temporary file
// and no fsync, rename or proof; an index that did not move at all costs
// nothing.
//
// Run is the only goroutine; Once may be called by tests and operators
// through it. Names: <group>-<applied index, 20 digits>-<unix ms>.snap.
package backup

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
)

// Defaults of Config.
const (
	DefaultInterval = time.Hour
	DefaultRetain   = 24
	// trailerDigestFromEnd: a record stream ends with the ledger digest
	// (32 bytes) then a CRC-32C (4 bytes).
	trailerDigestFromEnd = 32 + 4
)

// Ledger is what a backup reads.
type Ledger interface {
	SnapshotRecords(w io.Writer) error
	AppliedIndex() uint64
}

// Term reads the Raft term the envelope names.
type Term func() uint64

// Config configures Backups.
type Config struct {
	Dir      string
	Interval time.Duration
	Retain   int
	// Group names the files (group.GlobalName or the region).
	Group    string
	Ledger   Ledger
	IsLeader func() bool
	// Term is the group's current Raft term, written in each backup's
	// envelope (nil: 0).
	Term       Term
	Now        func() time.Time
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Result is one backup's outcome.
type Result struct {
	Path    string
	Index   uint64
	Bytes   int64
	Digest  fsm.Hash
	Skipped bool // the ledger's content is the last backup's
}

// Backups runs a group's scheduled backups.
type Backups struct {
	cfg Config
	m   metrics

	mu          sync.Mutex // one backup at a time; guards the fields below
	lastIndex   uint64     // the applied index of the last backup or skip
	lastContent fsm.Hash   // contentHash of the last backup
	haveContent bool       // lastContent is set
}

type metrics struct {
	written, skipped, failed prometheus.Counter
	lastIndex, lastSuccess   prometheus.Gauge
	bytes                    prometheus.Gauge
}

// New checks cfg and returns Backups.
func New(cfg Config) (*Backups, error) {
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Retain == 0 {
		cfg.Retain = DefaultRetain
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Term == nil {
		cfg.Term = func() uint64 { return 0 }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case cfg.Dir == "" || cfg.Group == "" || cfg.Ledger == nil || cfg.IsLeader == nil:
		return nil, errors.New("backup: Dir, Group, Ledger and IsLeader are required")
	case CheckGroupName(cfg.Group) != nil:
		return nil, fmt.Errorf("backup: %w", CheckGroupName(cfg.Group))
	case cfg.Interval < time.Second || cfg.Retain < 1:
		return nil, fmt.Errorf("backup: interval %s (at least 1s) and retain %d (at least 1)", cfg.Interval, cfg.Retain)
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	b := &Backups{cfg: cfg, m: metrics{
		written: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_backup_written_total", Help: "Backups written and proved."}),
		skipped: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_backup_skipped_total", Help: "Backups skipped: the ledger's content is the last backup's."}),
		failed:  prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_backup_failed_total", Help: "Backups that failed to write or to prove."}),
		lastIndex: prometheus.NewGauge(prometheus.GaugeOpts{Name: "strata_backup_last_index",
			Help: "Applied index of the last proved backup."}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Name: "strata_backup_last_success_timestamp_seconds",
			Help: "When the last backup was proved."}),
		bytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "strata_backup_last_bytes", Help: "Size of the last proved backup."}),
	}}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{b.m.written, b.m.skipped, b.m.failed, b.m.lastIndex, b.m.lastSuccess, b.m.bytes} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// Run backs up every interval while this node leads its group.
func (b *Backups) Run(ctx context.Context) {
	t := time.NewTicker(b.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		if !b.cfg.IsLeader() {
			continue
		}
		if res, err := b.Once(); err != nil {
			b.cfg.Logger.Error("backup failed", "err", err)
		} else if !res.Skipped {
			b.cfg.Logger.Info("backup written and proved", "path", res.Path, "index", res.Index, "bytes", res.Bytes)
		}
	}
}

// Once writes one backup and proves it, unless the ledger's content is
// the last backup's (checkpoint marks alone do not count).
func (b *Backups) Once() (Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	index := b.cfg.Ledger.AppliedIndex()
	if b.haveContent && index == b.lastIndex {
		b.m.skipped.Inc()
		return Result{Index: index, Skipped: true}, nil
	}
	res, content, err := b.write()
	if err == nil && res.Skipped {
		b.lastIndex = res.Index
		b.m.skipped.Inc()
		return res, nil
	}
	if err == nil {
		err = prove(res.Path, res.Digest)
		if err != nil {
			_ = os.Remove(res.Path)
		}
	}
	if err != nil {
		b.m.failed.Inc()
		return res, fmt.Errorf("backup: %w", err)
	}
	b.lastIndex, b.lastContent, b.haveContent = res.Index, content, true
	b.m.written.Inc()
	b.m.lastIndex.Set(float64(res.Index))
	b.m.lastSuccess.Set(float64(b.cfg.Now().Unix()))
	b.m.bytes.Set(float64(res.Bytes))
	return res, b.prune()
}

// write streams the enveloped snapshot into a temporary file, hashing
// its content; when that is the last backup's it drops the file (a
// skipped Result), else it fsyncs it and renames it into place.
func (b *Backups) write() (Result, fsm.Hash, error) {
	tmp, err := os.CreateTemp(b.cfg.Dir, ".backup-*.tmp")
	if err != nil {
		return Result{}, fsm.Hash{}, err
	}
	defer os.Remove(tmp.Name())
	ch := newContentHash()
	err = WriteEnveloped(tmp, b.cfg.Group, b.cfg.Term(), func(w io.Writer) error {
		return b.cfg.Ledger.SnapshotRecords(io.MultiWriter(w, ch))
	})
	content := ch.sum()
	var res Result
	if err == nil {
		res, err = describe(tmp)
	}
	if err == nil && b.haveContent && content == b.lastContent {
		res.Skipped = true
		return res, content, tmp.Close()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Result{}, content, err
	}
	res.Path = filepath.Join(b.cfg.Dir, fmt.Sprintf("%s-%020d-%d.snap", b.cfg.Group, res.Index, b.cfg.Now().UnixMilli()))
	if err := os.Rename(tmp.Name(), res.Path); err != nil {
		return Result{}, content, err
	}
	return res, content, syncDir(b.cfg.Dir)
}

// describe reads an enveloped record stream's applied index (ledger
// header) and ledger digest (trailer).
func describe(f *os.File) (Result, error) {
	_, off, ok, err := ReadEnvelope(f)
	if err != nil || !ok {
		return Result{}, fmt.Errorf("describe the backup: no envelope: %v", err)
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil || size < off+fsm.SnapshotHeaderLen+trailerDigestFromEnd {
		return Result{}, fmt.Errorf("snapshot of %d bytes: %v", size, err)
	}
	hdr := make([]byte, fsm.SnapshotHeaderLen)
	if _, err := f.ReadAt(hdr, off); err != nil {
		return Result{}, err
	}
	h, err := fsm.DecodeSnapshotHeader(hdr)
	if err != nil {
		return Result{}, err
	}
	var d fsm.Hash
	if _, err := f.ReadAt(d[:], size-trailerDigestFromEnd); err != nil {
		return Result{}, err
	}
	return Result{Index: h.AppliedIndex, Bytes: size, Digest: d}, nil
}

// prove restores the backup into a scratch store, which checks every
// record and checksum and the ledger digest against the trailer, and
// compares the restored ledger's digest with want.
func prove(path string, want fsm.Hash) error {
	_, got, err := Prove(path)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("prove %s: restored digest %s, the backup's %s", filepath.Base(path), hex.EncodeToString(got[:8]), hex.EncodeToString(want[:8]))
	}
	return nil
}

// Info is what a snapshot holds, as Inspect found it.
type Info struct {
	// Group and Term are the envelope's; Group is empty for a bare
	// ledger snapshot (no envelope, written before envelopes existed).
	Group string
	Term  uint64
	// Offset is where the ledger snapshot starts (the envelope's
	// length; 0 without one): what Raft restores is the rest.
	Offset                   int64
	Kind                     string // "records" or "store image"
	Index                    uint64
	Digest                   fsm.Hash
	Jobs, Workflows, Tenants int
}

// Prove restores the snapshot at path (enveloped or bare, either kind)
// into a scratch bbolt store, which checks its envelope and header,
// every record and checksum (and, for a record stream, the ledger digest
// against its trailer), and returns its applied index and the restored
// ledger's digest.
func Prove(path string) (uint64, fsm.Hash, error) {
	info, err := Inspect(path)
	return info.Index, info.Digest, err
}

// Inspect is Prove that also counts what the restored ledger holds
// (strata snapshot inspect).
func Inspect(path string) (Info, error) {
	var info Info
	dir, err := os.MkdirTemp("", "strata-snapshot-proof-")
	if err != nil {
		return info, err
	}
	defer os.RemoveAll(dir)
	st, err := boltstore.Open(boltstore.Config{Path: filepath.Join(dir, "ledger.db")})
	if err != nil {
		return info, err
	}
	defer st.Close()
	led, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		return info, err
	}
	f, err := os.Open(path)
	if err != nil {
		return info, err
	}
	defer f.Close()
	env, off, _, err := ReadEnvelope(f)
	if err != nil {
		return info, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	info.Group, info.Term, info.Offset = env.Group, env.Term, off
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return info, err
	}
	snap := io.NewSectionReader(f, off, size-off)
	hdr := make([]byte, fsm.SnapshotHeaderLen)
	if _, err := snap.ReadAt(hdr, 0); err != nil {
		return info, fmt.Errorf("%s: not a snapshot: %w", filepath.Base(path), err)
	}
	h, err := fsm.DecodeSnapshotHeader(hdr)
	if err != nil {
		return info, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	info.Kind = "records"
	if h.Kind == fsm.SnapshotKindStoreImage {
		info.Kind = "store image"
	}
	if err := led.Restore(snap); err != nil {
		return info, fmt.Errorf("prove %s: %w", filepath.Base(path), err)
	}
	info.Index = led.AppliedIndex()
	if off > 0 && env.Index != info.Index {
		return info, fmt.Errorf("prove %s: %w: names index %d, the snapshot holds %d", filepath.Base(path), ErrEnvelope, env.Index, info.Index)
	}
	if info.Digest, _, err = led.Digest(); err != nil {
		return info, err
	}
	err = led.View(func(tx fsm.ReadTx) error {
		if err := tx.Jobs("", "", func(*fsm.JobState) error { info.Jobs++; return nil }); err != nil {
			return err
		}
		if err := tx.Workflows("", func(*fsm.WorkflowState) error { info.Workflows++; return nil }); err != nil {
			return err
		}
		return tx.ChainHeads(func(t string, _ fsm.ChainHead) error {
			if t != "" {
				info.Tenants++
			}
			return nil
		})
	})
	return info, err
}

// prune removes this group's oldest backups beyond Retain.
func (b *Backups) prune() error {
	entries, err := os.ReadDir(b.cfg.Dir)
	if err != nil {
		return err
	}
	var mine []string
	for _, e := range entries {
		if name := e.Name(); strings.HasPrefix(name, b.cfg.Group+"-") && strings.HasSuffix(name, ".snap") {
			mine = append(mine, name)
		}
	}
	slices.Sort(mine) // the index is zero-padded: oldest first
	for len(mine) > b.cfg.Retain {
		if err := os.Remove(filepath.Join(b.cfg.Dir, mine[0])); err != nil {
			return err
		}
		mine = mine[1:]
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
