package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// dirtyLimit bounds the job ids a dirtySet holds between two takes. Past
// it the set collapses into "resync everything": one full scan costs less
// than tracking that many ids, and a follower (whose set nobody takes)
// holds at most this many.
const dirtyLimit = 16_384

// dirtySet is what the ledger changed since the reconcilers last looked
// (cluster/DESIGN.md, "Job lifecycle"): the ids of the jobs whose job or
// workflow events were applied, whether a worker joined or left, and
// whether the state changed wholesale (a snapshot restore) or too much to
// track. The FSM adds after each applied entry is committed to the store;
// the leader's reconciler takes it before reading the store, so whatever
// it takes is in the state it then reads, and whatever lands later is in
// the next take. Safe for concurrent use.
type dirtySet struct {
	mu      sync.Mutex
	limit   int
	jobs    map[string]struct{}
	all     bool
	workers bool
}

// dirtyTake is one take of a dirtySet.
type dirtyTake struct {
	// Jobs are the job ids touched (empty when All).
	Jobs []string
	// All: resync every job (overflow, restore).
	All bool
	// Workers: a worker joined or left.
	Workers bool
}

func newDirtySet(limit int) *dirtySet {
	return &dirtySet{limit: limit, jobs: map[string]struct{}{}}
}

// add records job ids; past the limit the set collapses into All.
func (d *dirtySet) add(ids ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ids {
		d.addLocked(id)
	}
}

func (d *dirtySet) addLocked(id string) {
	if d.all {
		return
	}
	if _, ok := d.jobs[id]; ok {
		return
	}
	if len(d.jobs) >= d.limit {
		d.overflowLocked()
		return
	}
	d.jobs[id] = struct{}{}
}

func (d *dirtySet) overflowLocked() {
	d.all = true
	clear(d.jobs)
}

// addAll asks for a resync of every job (the state was replaced).
func (d *dirtySet) addAll() {
	d.mu.Lock()
	d.overflowLocked()
	d.mu.Unlock()
}

// addWorkers records that a worker joined or left.
func (d *dirtySet) addWorkers() {
	d.mu.Lock()
	d.workers = true
	d.mu.Unlock()
}

// take returns what was recorded and empties the set.
func (d *dirtySet) take() dirtyTake {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := dirtyTake{All: d.all, Workers: d.workers}
	if !d.all && len(d.jobs) > 0 {
		t.Jobs = make([]string, 0, len(d.jobs))
		for id := range d.jobs {
			t.Jobs = append(t.Jobs, id)
		}
	}
	d.all, d.workers = false, false
	if len(d.jobs) > d.limit/4 {
		d.jobs = map[string]struct{}{} // give a burst's memory back
	} else {
		clear(d.jobs)
	}
	return t
}

// noteEntry records what an applied Raft entry changed: per batch, the
// results the ledger gave its events (an entry's batches and results are
// in the same order).
func (d *dirtySet) noteEntry(batches [][]byte, results [][]fsm.Result) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, b := range batches {
		if i < len(results) {
			d.noteBatchLocked(b, results[i])
		}
	}
}

// noteBatchLocked records the job ids of a batch's events that changed
// the ledger (applied or absorbed: duplicates and rejections change
// nothing), and worker joins and leaves. A batch the header reader
// cannot read although the ledger stored some of it means a format this
// code does not know: resync everything rather than miss a job.
func (d *dirtySet) noteBatchLocked(batch []byte, results []fsm.Result) {
	changed := func(i int) bool {
		return i < len(results) && (results[i].Outcome == fsm.OutcomeApplied || results[i].Outcome == fsm.OutcomeAbsorbed)
	}
	err := batchHeaders(batch, func(i int, t fsm.EventType, jobID []byte) {
		switch {
		case !changed(i):
		case len(jobID) > 0:
			if _, ok := d.jobs[string(jobID)]; !ok && !d.all {
				d.addLocked(string(jobID))
			}
		case t == fsm.TypeWorkerJoined || t == fsm.TypeWorkerLeft:
			d.workers = true
		}
	})
	if err != nil {
		for i := range results {
			if changed(i) {
				d.overflowLocked()
				return
			}
		}
	}
}

// errBatchHeader marks a batch whose event headers do not read.
var errBatchHeader = errors.New("cluster: batch event header")

// eventHeaderFixed is the fixed part of an encoded event before its
// fence (fsm/DESIGN.md, "Event"): version, type, id, HLC.
const eventHeaderFixed = 1 + 1 + len(fsm.EventID{}) + hlc.EncodedLen

// batchHeaders reads the type and job id of every event of an encoded
// batch (fsm/DESIGN.md, "Batch", version 1) without decoding bodies, and
// calls fn with each event's index in the batch. It checks only what it
// reads (versions, lengths against the input and the limits); a batch
// fsm.DecodeBatch accepts gives the same types and job ids. jobID is a
// slice of batch, valid during the call.
func batchHeaders(batch []byte, fn func(i int, t fsm.EventType, jobID []byte)) error {
	if len(batch) > fsm.MaxBatchBytes {
		return fmt.Errorf("%w: batch of %d bytes over %d", errBatchHeader, len(batch), fsm.MaxBatchBytes)
	}
	if len(batch) == 0 || batch[0] != fsm.BatchVersion {
		return fmt.Errorf("%w: not a version %d batch", errBatchHeader, fsm.BatchVersion)
	}
	off := 1
	count, n := binary.Uvarint(batch[off:])
	if n <= 0 || count > fsm.MaxBatchEvents {
		return fmt.Errorf("%w: bad event count", errBatchHeader)
	}
	off += n
	for i := range int(count) {
		if len(batch)-off < 4 {
			return fmt.Errorf("%w: event %d: frame length past the end", errBatchHeader, i)
		}
		size := int(binary.LittleEndian.Uint32(batch[off:]))
		off += 4
		if size > len(batch)-off {
			return fmt.Errorf("%w: event %d: frame of %d bytes past the end", errBatchHeader, i, size)
		}
		ev := batch[off : off+size]
		off += size
		if len(ev) < eventHeaderFixed || ev[0] != fsm.EventVersion {
			return fmt.Errorf("%w: event %d: short or not version %d", errBatchHeader, i, fsm.EventVersion)
		}
		t := fsm.EventType(ev[1])
		_, n := binary.Uvarint(ev[eventHeaderFixed:])
		if n <= 0 {
			return fmt.Errorf("%w: event %d: bad fence", errBatchHeader, i)
		}
		at := eventHeaderFixed + n
		l, n := binary.Uvarint(ev[at:])
		if n <= 0 || l > fsm.MaxJobIDBytes || l > uint64(len(ev)-at-n) {
			return fmt.Errorf("%w: event %d: bad job id", errBatchHeader, i)
		}
		at += n
		fn(i, t, ev[at:at+int(l)])
	}
	if off != len(batch) {
		return fmt.Errorf("%w: %d trailing bytes", errBatchHeader, len(batch)-off)
	}
	return nil
}
