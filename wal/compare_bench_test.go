package wal

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// BenchmarkCompare measures, on the same disk as BenchmarkAppend, what the
// NodeWAL is compared against (`make bench-wal` renders both into
// BENCHMARKS.md):
//   - raw-fdatasync: one writer, one 162-byte write and one fdatasync per
//     entry on a preallocated file; its rate is the disk's fdatasync rate,
//     the ceiling for syncs per second;
//   - mutex-fdatasync: a log that writes and fdatasyncs each append under
//     a mutex;
//   - bbolt-batch: bbolt DB.Batch, one key per append;
//   - raft-boltdb: raft-boltdb/v2 StoreLogs, one log per call.
func BenchmarkCompare(b *testing.B) {
	b.Run("store=raw-fdatasync/writers=1", func(b *testing.B) {
		f := preallocated(b)
		var off int64
		runWriters(b, 1, func(p []byte) error {
			err := writeSync(f, p, off)
			off += int64(HeaderBytes + len(p))
			return err
		})
	})
	for _, writers := range benchWriters {
		b.Run(fmt.Sprintf("store=mutex-fdatasync/writers=%d", writers), func(b *testing.B) {
			f := preallocated(b)
			var mu sync.Mutex
			var off int64
			runWriters(b, writers, func(p []byte) error {
				mu.Lock()
				defer mu.Unlock()
				err := writeSync(f, p, off)
				off += int64(HeaderBytes + len(p))
				return err
			})
		})
	}
	for _, writers := range benchWriters {
		b.Run(fmt.Sprintf("store=bbolt-batch/writers=%d", writers), func(b *testing.B) {
			benchBolt(b, writers)
		})
	}
	for _, writers := range benchWriters {
		b.Run(fmt.Sprintf("store=raft-boltdb/writers=%d", writers), func(b *testing.B) {
			benchRaftBolt(b, writers)
		})
	}
}

// preallocated returns a file fallocated to DefaultSegmentBytes, as a
// NodeWAL segment is.
func preallocated(b *testing.B) *os.File {
	b.Helper()
	f, err := os.Create(filepath.Join(benchDir(b), "raw"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	if err := unix.Fallocate(int(f.Fd()), 0, 0, DefaultSegmentBytes); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	return f
}

// writeSync writes a record-sized entry (header + payload) at off and
// fdatasyncs; it wraps around the preallocated file.
func writeSync(f *os.File, p []byte, off int64) error {
	var entry [HeaderBytes + benchPayloadBytes]byte
	copy(entry[HeaderBytes:], p)
	off %= DefaultSegmentBytes - int64(len(entry))
	if _, err := f.WriteAt(entry[:HeaderBytes+len(p)], off); err != nil {
		return err
	}
	return unix.Fdatasync(int(f.Fd()))
}

func benchBolt(b *testing.B, writers int) {
	db, err := bolt.Open(filepath.Join(benchDir(b), "bolt.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	bucket := []byte("log")
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		b.Fatal(err)
	}
	var seq atomic.Uint64
	runWriters(b, writers, func(p []byte) error {
		key := binary.BigEndian.AppendUint64(nil, seq.Add(1))
		return db.Batch(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(key, p) })
	})
}

func benchRaftBolt(b *testing.B, writers int) {
	store, err := raftboltdb.NewBoltStore(filepath.Join(benchDir(b), "raft.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	var index atomic.Uint64
	runWriters(b, writers, func(p []byte) error {
		return store.StoreLogs([]*raft.Log{{Index: index.Add(1), Term: 1, Type: raft.LogCommand, Data: p}})
	})
}
