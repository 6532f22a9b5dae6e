//go:build linux

package group

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// Benchmarks of the raft-boltdb options Open uses, against the
// alternatives, on the same disk in one run (results: BENCHMARKS.md,
// "Raft log store (raft-boltdb)"). Reproduce with:
//
//	go test -run '^$' -bench BenchmarkRaftLogStore -benchtime 50x ./cluster/

const (
	// benchLogPayloadBytes is one proposer entry: ~20 events of ~200 B.
	benchLogPayloadBytes = 4096
	// benchPrefillBatch is the StoreLogs batch used to fill a store
	// before the timed loop.
	benchPrefillBatch = 256
	// benchSyncsPerCommit is bbolt's fdatasyncs per write transaction:
	// one after the dirty pages, one after the meta page (tx.go). A
	// commit that grows the file adds a truncate and one fsync.
	benchSyncsPerCommit = 2
)

// benchSnapshotThreshold is how many entries Raft appends between
// snapshots, hence between two log compactions (DeleteRange): the
// hashicorp/raft default, which Open keeps.
var benchSnapshotThreshold = raft.DefaultConfig().SnapshotThreshold

// logStoreVariant is one set of bbolt options for the Raft log store.
type logStoreVariant struct {
	noFreelistSync bool
	freelist       bbolt.FreelistType
}

func (v logStoreVariant) String() string {
	return fmt.Sprintf("freelist=%s/freelistsync=%t", v.freelist, !v.noFreelistSync)
}

// options are the raft-boltdb options of v; Open's are
// {noFreelistSync: true, freelist: map}.
func (v logStoreVariant) options(path string, noSync bool) raftboltdb.Options {
	return raftboltdb.Options{
		Path:   path,
		NoSync: noSync,
		BoltOptions: &bbolt.Options{
			Timeout:        time.Second,
			NoFreelistSync: v.noFreelistSync,
			FreelistType:   v.freelist,
		},
	}
}

var logStoreVariants = []logStoreVariant{
	{noFreelistSync: true, freelist: bbolt.FreelistMapType}, // Open's
	{noFreelistSync: false, freelist: bbolt.FreelistMapType},
	{noFreelistSync: true, freelist: bbolt.FreelistArrayType},
	{noFreelistSync: false, freelist: bbolt.FreelistArrayType},
}

// BenchmarkRaftLogStore stores batches of log entries with StoreLogs, as
// the leader (a batch of applies) and followers (one AppendEntries of up
// to MaxAppendEntries) do; one op is one StoreLogs. Phases:
//
//   - append: from an empty file; the freelist only holds the pages that
//     copy-on-write freed, so it stays small.
//   - compact: Raft's steady state. The store starts with raftTrailingLogs
//     entries after a compaction of benchSnapshotThreshold entries, and
//     every benchSnapshotThreshold entries the loop deletes all but the
//     last raftTrailingLogs (as Raft's compactLogs does after a snapshot;
//     the DeleteRange is timed and its commit counted). The file is
//     fragmented and the freelist holds thousands of pages: what a synced
//     freelist rewrites on every commit.
//
// Metrics: entries/s and payload MB/s; fsyncs/op (fdatasyncs and fsyncs
// per StoreLogs, counted from bbolt's commit path: 2 per transaction plus
// 1 per file growth, checked against strace -c); disk-KiB/op (bytes the
// process sent to storage, /proc/self/io); cpu-µs/op (user + system CPU
// of the process, which a loaded machine inflates less than wall time,
// and which shows the freelist's allocation cost); freelist-KiB (mean in-memory
// freelist after each op: the size a synced freelist writes per commit);
// reopen-ms (closing and opening the final file once: an unsynced
// freelist is rebuilt by scanning the B-tree).
func BenchmarkRaftLogStore(b *testing.B) {
	for _, compact := range []bool{false, true} {
		phase := "append"
		if compact {
			phase = "compact"
		}
		for _, n := range []int{1, 16, 64, 256} {
			for _, v := range logStoreVariants {
				b.Run(fmt.Sprintf("phase=%s/batch=%d/%s", phase, n, v), func(b *testing.B) {
					benchLogStore(b, v, n, compact)
				})
			}
		}
	}
}

// logStoreBench is a store under benchmark and where its log stands.
type logStoreBench struct {
	store    *raftboltdb.BoltStore
	path     string
	payload  []byte
	first    uint64 // first index in the store
	last     uint64 // last index in the store
	lastSnap uint64 // last index at the previous compaction
	commits  int    // write transactions, including compactions
}

// storeBatch appends n entries in one StoreLogs, reusing logs.
func (s *logStoreBench) storeBatch(logs []*raft.Log) error {
	for i, l := range logs {
		*l = raft.Log{Index: s.last + 1 + uint64(i), Term: 1, Type: raft.LogCommand, Data: s.payload, AppendedAt: time.Now()}
	}
	if err := s.store.StoreLogs(logs); err != nil {
		return fmt.Errorf("store logs %d-%d: %w", s.last+1, s.last+uint64(len(logs)), err)
	}
	s.last += uint64(len(logs))
	s.commits++
	return nil
}

// maybeCompact deletes all but the last raftTrailingLogs entries once
// benchSnapshotThreshold entries were appended since the last compaction.
func (s *logStoreBench) maybeCompact() error {
	if s.last-s.lastSnap < benchSnapshotThreshold || s.last <= raftTrailingLogs {
		return nil
	}
	s.lastSnap = s.last
	upTo := s.last - raftTrailingLogs
	if upTo < s.first {
		return nil
	}
	if err := s.store.DeleteRange(s.first, upTo); err != nil {
		return fmt.Errorf("delete range %d-%d: %w", s.first, upTo, err)
	}
	s.first = upTo + 1
	s.commits++
	return nil
}

// prefill fills the store to raftTrailingLogs + benchSnapshotThreshold
// entries without syncing, compacts it to the last raftTrailingLogs, and
// syncs once.
func (s *logStoreBench) prefill() error {
	logs := newLogBatch(benchPrefillBatch)
	for s.last < raftTrailingLogs+benchSnapshotThreshold {
		if err := s.storeBatch(logs); err != nil {
			return err
		}
	}
	if err := s.maybeCompact(); err != nil {
		return err
	}
	return s.store.Sync()
}

func newLogBatch(n int) []*raft.Log {
	logs := make([]*raft.Log, n)
	for i := range logs {
		logs[i] = new(raft.Log)
	}
	return logs
}

func benchLogStore(b *testing.B, v logStoreVariant, n int, compact bool) {
	s := &logStoreBench{path: filepath.Join(b.TempDir(), "raft.db"), payload: make([]byte, benchLogPayloadBytes), first: 1}
	rand.Read(s.payload)
	if compact {
		// Fill without fsyncs (minutes otherwise), then reopen as measured.
		store, err := raftboltdb.New(v.options(s.path, true))
		if err != nil {
			b.Fatalf("open %s: %v", s.path, err)
		}
		s.store = store
		if err := s.prefill(); err != nil {
			b.Fatal(err)
		}
		if err := store.Close(); err != nil {
			b.Fatalf("close %s: %v", s.path, err)
		}
	}
	store, err := raftboltdb.New(v.options(s.path, false))
	if err != nil {
		b.Fatalf("open %s: %v", s.path, err)
	}
	s.store = store
	defer func() { s.store.Close() }()

	logs := newLogBatch(n)
	size := fileSize(b, s.path)
	growths, freelistBytes := 0, 0
	commits0 := s.commits
	written0, haveIO := processWriteBytes()
	cpu0 := processCPU(b)
	for b.Loop() {
		if err := s.storeBatch(logs); err != nil {
			b.Fatal(err)
		}
		if compact {
			if err := s.maybeCompact(); err != nil {
				b.Fatal(err)
			}
		}
		if sz := fileSize(b, s.path); sz > size {
			size = sz
			growths++
		}
		freelistBytes += s.store.Stats().FreelistInuse
	}
	cpu := processCPU(b) - cpu0
	elapsed := b.Elapsed().Seconds()
	ops := float64(b.N)
	b.ReportMetric(ops*float64(n)/elapsed, "entries/s")
	b.ReportMetric(ops*float64(n*benchLogPayloadBytes)/elapsed/1e6, "MB/s")
	b.ReportMetric(float64(benchSyncsPerCommit*(s.commits-commits0)+growths)/ops, "fsyncs/op")
	if written1, ok := processWriteBytes(); ok && haveIO {
		b.ReportMetric(float64(written1-written0)/ops/1024, "disk-KiB/op")
	}
	b.ReportMetric(float64(cpu.Microseconds())/ops, "cpu-µs/op")
	b.ReportMetric(float64(freelistBytes)/ops/1024, "freelist-KiB")
	b.ReportMetric(float64(size)/(1<<20), "file-MiB")

	if err := s.store.Close(); err != nil {
		b.Fatalf("close %s: %v", s.path, err)
	}
	start := time.Now()
	s.store, err = raftboltdb.New(v.options(s.path, false))
	if err != nil {
		b.Fatalf("reopen %s: %v", s.path, err)
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "reopen-ms")
}

func fileSize(b *testing.B, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatalf("stat %s: %v", path, err)
	}
	return fi.Size()
}

// processCPU is the user and system CPU time this process has used: on a
// shared machine it varies far less than wall time.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processWriteBytes is the bytes this process caused to be sent to storage
// (Linux /proc/self/io write_bytes); false where that is not available.
func processWriteBytes() (int64, bool) {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
