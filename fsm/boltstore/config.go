package boltstore

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults and bounds of Config.
const (
	// DefaultInitialMmapBytes is bbolt's initial memory map: address
	// space, not memory. Growing past the mapping waits until every read
	// transaction ends (see the package doc, HAZARD), so it is large.
	DefaultInitialMmapBytes = 1 << 30
	// DefaultHistoryTailEntries is K, the history entries a job keeps in
	// its own value before they are sealed into a chunk (FORMAT.md).
	DefaultHistoryTailEntries = 32
	// MaxHistoryTailEntries bounds K; a chunk holds at most 2K entries,
	// which is what the decoders accept (maxEntries).
	MaxHistoryTailEntries = maxEntries / 2
	// DefaultJobCacheEntries is the number of jobs whose decoded value
	// Update keeps between batches.
	DefaultJobCacheEntries = 4096
	// DefaultWorkflowCacheEntries is the number of leased workflows
	// whose decoded record Update keeps between batches (a few hundred
	// bytes each).
	DefaultWorkflowCacheEntries = 8192
	// DefaultMaxImageBytes bounds the store image a restore accepts.
	DefaultMaxImageBytes = 1 << 40
	// DefaultReplaceCommitBytes is how much Replace writes to its new file
	// between two commits, which bounds its memory.
	DefaultReplaceCommitBytes = 16 << 20
	// DefaultCommitUpdates bounds the Updates one grouped transaction
	// holds (Config.CommitUpdates).
	DefaultCommitUpdates = 1000
	// DefaultCommitBytes bounds the bytes a grouped transaction hands to
	// bbolt before it commits (Config.CommitBytes): bbolt keeps them, and
	// the nodes they dirty, in memory until the commit.
	DefaultCommitBytes = 32 << 20
	// NodeCommitInterval is the CommitInterval the store's benchmarks
	// run with (a node's is ledger_commit_interval, 100 ms by default:
	// cluster.DefaultLedgerCommitInterval); a shorter interval bounds the
	// stall of a read that finds Updates pending.
	NodeCommitInterval = 50 * time.Millisecond
	// MaxCommitInterval bounds Config.CommitInterval.
	MaxCommitInterval = 10 * time.Second
	// DefaultLockTimeout bounds the wait for the file lock at Open (another
	// process holding the store).
	DefaultLockTimeout = 5 * time.Second
)

// Config configures a Store. Zero values take the defaults above.
type Config struct {
	// Path is the bbolt file. Required. Next to it live Path+".state",
	// the clean-shutdown marker, and, while a restore runs,
	// Path+".restore-*".
	Path string
	// FsyncEveryBatch makes every Update fsync before it returns, so the
	// file survives power loss. Off (the default), Update does not fsync
	// and a file left by anything but Close is discarded at the next Open
	// (the package doc says why that is sound).
	FsyncEveryBatch bool
	// InitialMmapBytes is bbolt's initial memory map.
	InitialMmapBytes int
	// HistoryTailEntries is K (FORMAT.md, "History"): 2 to
	// MaxHistoryTailEntries.
	HistoryTailEntries int
	// JobCacheEntries bounds the decoded jobs Update keeps between
	// batches (so a job touched by every batch is not decoded every time).
	JobCacheEntries int
	// WorkflowCacheEntries bounds the decoded records of leased
	// workflows Update keeps between batches (so a worker's report
	// neither searches nor decodes its workflow).
	WorkflowCacheEntries int
	// MaxImageBytes bounds the image RestoreImage accepts.
	MaxImageBytes int64
	// ReplaceCommitBytes: Replace commits its new file every time about
	// this many bytes were written.
	ReplaceCommitBytes int
	// LockTimeout bounds the wait for the file lock at Open.
	LockTimeout time.Duration
	// CommitInterval > 0 turns on group commit (group.go): Updates add
	// to one bbolt transaction, committed CommitInterval after it began,
	// after CommitUpdates Updates or CommitBytes bytes, before any read
	// and at Close. 0 (the default): every Update commits. Not with
	// FsyncEveryBatch, whose point is a durable file after each Update.
	CommitInterval time.Duration
	// CommitUpdates bounds the Updates of one grouped transaction.
	CommitUpdates int
	// CommitBytes bounds the bytes one grouped transaction hands bbolt.
	CommitBytes int
	// Logger receives the store's few events (a discarded file, a
	// restore). Default: discard.
	Logger *slog.Logger

	// statistics keeps bbolt's DB.Stats (off in production: a lock per
	// transaction for numbers nothing reads); benchmarks turn it on to
	// count the pages a commit writes.
	statistics bool
}

// Validate fills defaults and checks c.
func (c *Config) Validate() error {
	if c.InitialMmapBytes == 0 {
		c.InitialMmapBytes = DefaultInitialMmapBytes
	}
	if c.HistoryTailEntries == 0 {
		c.HistoryTailEntries = DefaultHistoryTailEntries
	}
	if c.JobCacheEntries == 0 {
		c.JobCacheEntries = DefaultJobCacheEntries
	}
	if c.WorkflowCacheEntries == 0 {
		c.WorkflowCacheEntries = DefaultWorkflowCacheEntries
	}
	if c.MaxImageBytes == 0 {
		c.MaxImageBytes = DefaultMaxImageBytes
	}
	if c.ReplaceCommitBytes == 0 {
		c.ReplaceCommitBytes = DefaultReplaceCommitBytes
	}
	if c.LockTimeout == 0 {
		c.LockTimeout = DefaultLockTimeout
	}
	if c.CommitUpdates == 0 {
		c.CommitUpdates = DefaultCommitUpdates
	}
	if c.CommitBytes == 0 {
		c.CommitBytes = DefaultCommitBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.Path == "":
		return errors.New("boltstore: config: Path is required")
	case c.InitialMmapBytes < 0:
		return fmt.Errorf("boltstore: config: InitialMmapBytes %d is negative", c.InitialMmapBytes)
	case c.HistoryTailEntries < 2 || c.HistoryTailEntries > MaxHistoryTailEntries:
		return fmt.Errorf("boltstore: config: HistoryTailEntries %d is outside [2, %d]", c.HistoryTailEntries, MaxHistoryTailEntries)
	case c.JobCacheEntries < 0:
		return fmt.Errorf("boltstore: config: JobCacheEntries %d is negative", c.JobCacheEntries)
	case c.WorkflowCacheEntries < 0:
		return fmt.Errorf("boltstore: config: WorkflowCacheEntries %d is negative", c.WorkflowCacheEntries)
	case c.MaxImageBytes < minImageBytes:
		return fmt.Errorf("boltstore: config: MaxImageBytes %d is below %d", c.MaxImageBytes, minImageBytes)
	case c.ReplaceCommitBytes < 1<<20:
		return fmt.Errorf("boltstore: config: ReplaceCommitBytes %d is below 1 MiB", c.ReplaceCommitBytes)
	case c.CommitInterval < 0 || c.CommitInterval > MaxCommitInterval:
		return fmt.Errorf("boltstore: config: CommitInterval %s is outside [0, %s]", c.CommitInterval, MaxCommitInterval)
	case c.CommitInterval > 0 && c.FsyncEveryBatch:
		return errors.New("boltstore: config: CommitInterval (group commit) and FsyncEveryBatch exclude each other")
	case c.CommitUpdates < 1:
		return fmt.Errorf("boltstore: config: CommitUpdates %d is below 1", c.CommitUpdates)
	case c.CommitBytes < 1<<20:
		return fmt.Errorf("boltstore: config: CommitBytes %d is below 1 MiB", c.CommitBytes)
	case c.LockTimeout < 0:
		return fmt.Errorf("boltstore: config: LockTimeout %s is negative", c.LockTimeout)
	}
	return nil
}
