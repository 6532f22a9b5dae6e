package boltstore

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/strata-ledger/strata/fsm"
)

// ErrClosed is returned by every method of a closed Store.
var ErrClosed = errors.New("boltstore: store is closed")

// ErrCorrupt wraps every error about bytes of the file (or a marker) that
// do not decode: the store cannot be served and must be rebuilt.
var ErrCorrupt = errors.New("boltstore: corrupt store")

// ErrOldLayout is the refusal of a store (or a snapshot image) written by
// an older release in layout 1 or 2, whose events bucket is keyed by
// event id alone: this release keys it by tenant and id (layout 3) and
// does not migrate (FORMAT.md). Open refuses such a file every time,
// leaving it and its clean-shutdown marker as they were.
var ErrOldLayout = errors.New("boltstore: store of an old layout (event ids not scoped by tenant), not migrated")

// Store is the bbolt fsm.Store and fsm.ImageStore. Safe for concurrent
// use: Views run in parallel with each other and with one Update.
type Store struct {
	cfg    Config
	log    *slog.Logger
	marker string // path of the clean-shutdown marker

	// writeMu serializes the write paths (Update, the swap of a restore,
	// Close); it guards ar, wtx and cache.
	writeMu sync.Mutex
	ar      arena
	wtx     tx        // Update's, reused
	cache   *hotState // what Update keeps between transactions (hot.go)
	group   group     // group commit's open transaction (group.go)
	// onCommit is called after each group commit (SetOnCommit); guarded
	// by writeMu.
	onCommit func()

	// mu: RLock while a transaction runs on db; Lock to swap or close it.
	mu      sync.RWMutex
	db      *bolt.DB
	rebuilt string       // why Open discarded the file it found; "" if it did not
	unlock  func() error // releases the store's lock file
}

// Open opens the store at cfg.Path, creating it if needed, and holds its
// lock (Path+".lock") until Close. A file left by an unclean shutdown (no
// valid clean-shutdown marker; see the package doc and FORMAT.md) is
// discarded unopened: Open starts an empty store (applied index 0), logs
// why, and Rebuilt reports it, so Raft restores the latest snapshot and
// replays its log. A file the marker vouches for that fails to open is an
// error.
func Open(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, log: cfg.Logger, marker: cfg.Path + ".state", cache: newHotState(cfg)}
	unlock, err := lockStore(cfg.Path, cfg.LockTimeout)
	if err != nil {
		return nil, err
	}
	if err := removeTemps(cfg.Path); err != nil {
		unlock()
		return nil, err
	}
	db, err := s.openChecked()
	if err != nil {
		unlock()
		return nil, err
	}
	s.db, s.unlock = db, unlock
	if s.rebuilt != "" {
		s.log.Warn("ledger store discarded: Raft restores it from its snapshot and log",
			"path", cfg.Path, "reason", s.rebuilt)
	}
	return s, nil
}

// openChecked applies the clean-shutdown rule and opens the file. A file
// that may be torn is discarded without being opened: bbolt rebuilds its
// freelist at open by walking every page (NoFreelistSync), and panics on
// a damaged page in a goroutine of its own.
func (s *Store) openChecked() (*bolt.DB, error) {
	m, found, merr := readMarker(s.marker)
	info, err := os.Stat(s.cfg.Path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("boltstore: open %s: %w", s.cfg.Path, err)
	}
	switch {
	case exists && merr != nil:
		s.rebuilt = fmt.Sprintf("clean-shutdown marker unusable: %v", merr)
	case exists && !found:
		s.rebuilt = "no clean-shutdown marker: the last run did not close the store"
	case exists && info.Size() == 0:
		s.rebuilt = "empty file"
	case exists && m.State == markerClean:
		if txid, err := s.fileTxID(m.TxID); errors.Is(err, ErrOldLayout) {
			return nil, fmt.Errorf("boltstore: open %s: %w", s.cfg.Path, err)
		} else if err != nil {
			s.rebuilt = fmt.Sprintf("clean-shutdown marker, but the file does not open: %v", err)
		} else if txid != m.TxID {
			s.rebuilt = fmt.Sprintf("clean-shutdown marker names transaction %d, the file ends at %d", m.TxID, txid)
		}
	}
	if s.rebuilt != "" {
		if err := s.discard(); err != nil {
			return nil, err
		}
	}
	if !s.cfg.FsyncEveryBatch {
		// From the first write on, the file may be torn by power loss
		// until Close writes a new marker.
		if err := removeMarker(s.marker); err != nil {
			return nil, err
		}
	}
	db, err := s.openDB(s.cfg.Path)
	if err != nil {
		return nil, err
	}
	if err := ensureLayout(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("boltstore: open %s: %w", s.cfg.Path, err)
	}
	if s.cfg.FsyncEveryBatch {
		if err := writeMarker(s.marker, marker{State: markerSynced}); err != nil {
			db.Close()
			return nil, err
		}
	}
	return db, nil
}

// discard removes the file (durably) so an empty store replaces it.
func (s *Store) discard() error {
	if err := os.Remove(s.cfg.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("boltstore: discard %s: %w", s.cfg.Path, err)
	}
	return fsyncDir(filepath.Dir(s.cfg.Path))
}

func (s *Store) openDB(path string) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, s.options(false))
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	return db, nil
}

// options: NoSync unless FsyncEveryBatch; the freelist is not written
// (rebuilt by a scan at open: one less page per commit) and kept as a
// hash map (fast allocation in a large file).
func (s *Store) options(readOnly bool) *bolt.Options {
	return &bolt.Options{
		Timeout:         s.cfg.LockTimeout,
		NoSync:          !s.cfg.FsyncEveryBatch,
		NoGrowSync:      !s.cfg.FsyncEveryBatch,
		NoFreelistSync:  true,
		FreelistType:    bolt.FreelistMapType,
		InitialMmapSize: s.cfg.InitialMmapBytes,
		NoStatistics:    !s.cfg.statistics,
		ReadOnly:        readOnly,
	}
}

// fileTxID reads the last transaction id of the file, opening it
// read-only (which reads the meta pages only). If it is want (the file is
// the one the clean-shutdown marker vouches for), it also reads the
// layout byte and refuses an old layout (ErrOldLayout) before Open
// removes the marker: an old store is refused at every Open, never
// discarded by the next one.
func (s *Store) fileTxID(want uint64) (uint64, error) {
	opts := s.options(true)
	opts.InitialMmapSize = 0
	db, err := bolt.Open(s.cfg.Path, 0o600, opts)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	txid := lastTxID(db)
	if txid != want {
		return txid, nil
	}
	return txid, db.View(func(btx *bolt.Tx) error {
		if meta := btx.Bucket(bucketMeta); meta != nil {
			return refuseOldLayout(meta.Get(metaLayout))
		}
		return nil
	})
}

func lastTxID(db *bolt.DB) uint64 {
	var id uint64
	_ = db.View(func(btx *bolt.Tx) error { id = uint64(btx.ID()); return nil })
	return id
}

// ensureLayout checks the buckets and the layout version, creating them
// in a new file; it writes nothing to an existing file, and refuses one
// of an old layout (ErrOldLayout: no migration).
func ensureLayout(db *bolt.DB) error {
	fresh := false
	err := db.View(func(btx *bolt.Tx) error {
		if btx.Bucket(bucketMeta) == nil {
			fresh = true
			return nil
		}
		return checkLayout(btx)
	})
	if err != nil || !fresh {
		return err
	}
	return db.Update(func(btx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := btx.CreateBucket(name); err != nil {
				return fmt.Errorf("%w: create bucket %s: %v", ErrCorrupt, name, err)
			}
		}
		return btx.Bucket(bucketMeta).Put(metaLayout, []byte{layoutVersion})
	})
}

// checkLayout checks that btx holds a store of the current layout: its
// layout byte and every bucket. Layouts 1 and 2 are ErrOldLayout.
func checkLayout(btx *bolt.Tx) error {
	meta := btx.Bucket(bucketMeta)
	if meta == nil {
		return fmt.Errorf("%w: no bucket %q", ErrCorrupt, bucketMeta)
	}
	v := meta.Get(metaLayout)
	if err := refuseOldLayout(v); err != nil {
		return err
	}
	if len(v) != 1 || v[0] != layoutVersion {
		return fmt.Errorf("%w: layout version %x, want %d", ErrCorrupt, v, layoutVersion)
	}
	for _, name := range allBuckets {
		if btx.Bucket(name) == nil {
			return fmt.Errorf("%w: no bucket %q", ErrCorrupt, name)
		}
	}
	return nil
}

// refuseOldLayout returns ErrOldLayout, with what to do, for the layout
// byte of a store written by an older release; nil for any other.
func refuseOldLayout(v []byte) error {
	if len(v) != 1 || (v[0] != layoutV1 && v[0] != layoutV2) {
		return nil
	}
	return fmt.Errorf("%w: layout %d, this release reads layout %d only: start this node from an empty "+
		"data directory (every store and snapshot of the cluster must be recreated), or run the previous release",
		ErrOldLayout, v[0], layoutVersion)
}

// removeTemps removes what an interrupted restore left next to path.
func removeTemps(path string) error {
	temps, err := filepath.Glob(path + ".restore-*")
	if err != nil {
		return fmt.Errorf("boltstore: list temporary files of %s: %w", path, err)
	}
	for _, f := range temps {
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("boltstore: remove %s: %w", f, err)
		}
	}
	return nil
}

// Rebuilt returns why Open discarded the file it found (an unclean
// shutdown) and started empty; "" if it did not.
func (s *Store) Rebuilt() string { return s.rebuilt }

// Close closes the store. Without FsyncEveryBatch it fsyncs the file
// and then writes the clean-shutdown marker; a process that dies before
// leaves no marker, and the next Open rebuilds.
func (s *Store) Close() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	cerr := s.commitGroup(commitClose) // nil if nothing is pending
	failed := s.group.failed
	if gs := s.GroupStats(); s.grouped() {
		s.log.Info("ledger store: group commit", "updates", gs.Updates, "by_interval", gs.Interval,
			"by_size", gs.Size, "by_read", gs.Read, "at_close", gs.Close)
	}
	db := s.db
	s.db = nil
	s.cache.clear()
	defer s.unlock()
	if failed != nil {
		// Applied updates are missing from the file: no clean marker, so
		// the next Open rebuilds it from Raft.
		db.Close()
		if cerr != nil {
			return cerr
		}
		return fmt.Errorf("boltstore: close %s: %w", s.cfg.Path, failed)
	}
	if s.cfg.FsyncEveryBatch {
		if err := db.Close(); err != nil {
			return fmt.Errorf("boltstore: close %s: %w", s.cfg.Path, err)
		}
		return nil
	}
	if err := db.Sync(); err != nil {
		db.Close()
		return fmt.Errorf("boltstore: close %s: fsync: %w", s.cfg.Path, err)
	}
	txid := lastTxID(db)
	if err := db.Close(); err != nil {
		return fmt.Errorf("boltstore: close %s: %w", s.cfg.Path, err)
	}
	return writeMarker(s.marker, marker{State: markerClean, TxID: txid})
}

// View implements fsm.Store: fn reads one bbolt read transaction (after
// committing what group commit left pending, so it sees every Update).
func (s *Store) View(fn func(fsm.ReadTx) error) error {
	if err := s.flushForRead(); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return ErrClosed
	}
	return s.view(fn)
}

// view runs fn in a read transaction of the file; s.mu is held.
func (s *Store) view(fn func(fsm.ReadTx) error) error {
	return s.db.View(func(btx *bolt.Tx) error {
		t := &tx{}
		if err := t.bind(btx); err != nil {
			return err
		}
		return fn(t)
	})
}

// Update implements fsm.Store: one bbolt transaction; fn's job changes
// are written at its end (flush), then bbolt commits (and fsyncs if
// FsyncEveryBatch).
func (s *Store) Update(fn func(fsm.Tx) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return ErrClosed
	}
	if s.grouped() {
		if s.group.failed != nil {
			return s.group.failed
		}
		return s.updateGrouped(fn)
	}
	t := s.beginUpdate()
	committed := false
	defer func() { s.endUpdate(t, committed) }() // also if fn panics
	err := s.db.Update(func(btx *bolt.Tx) error {
		if err := t.bind(btx); err != nil {
			return err
		}
		if err := fn(t); err != nil {
			return err
		}
		return t.flush()
	})
	committed = err == nil
	return err
}

func (s *Store) beginUpdate() *tx {
	t := &s.wtx
	if t.entries == nil {
		t.entries = make(map[string]*jobEntry)
		t.lastSeq = make(map[string]uint64)
		t.blocks = make(map[string]*openBlock)
		t.workflowsPut = make(map[string]*fsm.WorkflowState)
	}
	t.write, t.ar, t.cache, t.tailK = true, &s.ar, s.cache, s.cfg.HistoryTailEntries
	return t
}

// endUpdate installs the transaction's entries in the job cache if it
// committed, and forgets them if not (they were changed in place).
func (s *Store) endUpdate(t *tx, committed bool) {
	s.releaseTx(t, committed)
	s.ar.reset()
}

// releaseTx is endUpdate but for the arena, which a transaction left
// open by group commit still needs.
func (s *Store) releaseTx(t *tx, committed bool) {
	for id, e := range t.entries {
		if committed {
			s.cache.jobs.put(id, e)
		} else {
			s.cache.jobs.forget(id)
		}
	}
	clear(t.entries)
	s.cache.installWorkflows(t.workflowsPut, committed)
	clear(t.workflowsPut)
	clear(t.lastSeq)
	for _, b := range t.blocks { // left open by a failed transaction
		t.freeBlocks = append(t.freeBlocks, b)
	}
	clear(t.blocks)
	clear(t.dirty)
	t.dirty, t.missed, t.btx, t.evCursor, t.wfCursor = t.dirty[:0], false, nil, nil, nil
}
