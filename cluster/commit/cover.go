package commit

import "github.com/strata-ledger/strata/wal"

// What a NodeWAL record needs before it may be compacted away (the
// COMPACTED and APPLIED watermarks, cluster/walgc).
//
// A record is needed for one thing only: after a crash, Recover
// re-proposes every record above the tier watermark, so a record is
// needed until it is durable where it must end up — its tier, the Raft
// group of this node's ledger. A manager's record ends in the regional
// group (REGIONAL): the forwarder carries it on to the global ledger from
// the regional ledger's replicated state, never from a NodeWAL; a gate's
// ends in the global group. Reaching the tier means committed by a quorum
// and applied by the leader. On top of that, the node keeps a record until
// its own copy of the group's state holds it in a Raft snapshot on disk:
// the entry that carried the record is at or below the index of this
// node's last persisted snapshot. Then neither this node's Raft log (which
// Raft truncates only behind a snapshot) nor its ledger store (rebuilt from
// the snapshot and the log if lost) can lose it, whatever the rest of the
// group does.
//
// So a record needs the Raft index of the entry that carried it. The
// pipeline learns it when the record reaches the tier (the proposal's
// index, from this node's Raft or from the leader it forwarded to). A
// record the tier refused for good, or one of another type, needs nothing:
// its refusal is kept in the refusal file, not in the NodeWAL.
//
// The index is not always known: records that were at the tier before a
// restart (between the COMPACTED and the tier watermarks of the
// checkpoint) were committed at indexes nobody wrote down, and a leader
// that answers a proposal without its index says nothing. Such a need is
// unknown, tagged with an epoch; an index of an entry proposed by an
// attempt that started at or after that epoch bounds it: that entry was
// appended to the leader's log after the unknown one was committed, and a
// leader's log holds every committed entry, so it sits at a higher index.
type need struct {
	index uint64 // Raft index to be covered; 0: none
	epoch uint64 // > 0: the index is unknown (see above)
}

func (n need) unknown() bool { return n.epoch > 0 }

// merge is what two records together need: the higher index, and unknown
// if either is, resolved only by an attempt started after both.
func (n need) merge(m need) need {
	return need{index: max(n.index, m.index), epoch: max(n.epoch, m.epoch)}
}

// maxCoverSteps bounds the steps kept; beyond it neighbouring steps are
// merged, which can only delay compaction, never hasten it.
const maxCoverSteps = 1 << 14

// step: every record in (the previous step's last, last] needs need.
type step struct {
	last wal.LSN
	need need
}

// cover is what the records of the finished prefix of the NodeWAL need:
// a run of steps above base, the highest LSN already forgotten
// (compacted). Part of lsnTracker, guarded by its mutex.
type cover struct {
	base  wal.LSN
	steps []step
	// unknownDone and unknownSteps count the unknown needs in
	// lsnTracker.done and in steps: resolving costs nothing without one.
	unknownDone, unknownSteps int
}

// newCover starts above compacted, with the records in (compacted, mark]
// at the tier with unknown indexes (epoch 1: any attempt of this pipeline
// bounds them, all start after the restart).
func newCover(compacted, mark wal.LSN) cover {
	c := cover{base: compacted}
	if mark > compacted {
		c.steps = []step{{last: mark, need: need{epoch: 1}}}
		c.unknownSteps = 1
	}
	return c
}

// push records that the finished prefix grew to last, and that the records
// it gained need n.
func (c *cover) push(last wal.LSN, n need) {
	if k := len(c.steps); k > 0 {
		if prev := &c.steps[k-1]; !n.unknown() && !prev.need.unknown() && n.index <= prev.need.index {
			prev.last = last // no query can tell the two steps apart
			return
		}
	}
	c.steps = append(c.steps, step{last: last, need: n})
	if n.unknown() {
		c.unknownSteps++
	}
	if len(c.steps) > maxCoverSteps {
		c.halve()
	}
}

func (c *cover) recountSteps() {
	c.unknownSteps = 0
	for _, s := range c.steps {
		if s.need.unknown() {
			c.unknownSteps++
		}
	}
}

// halve merges the steps two by two.
func (c *cover) halve() {
	out := c.steps[:0]
	for i := 0; i < len(c.steps); i += 2 {
		s := c.steps[i]
		if i+1 < len(c.steps) {
			s = step{last: c.steps[i+1].last, need: s.need.merge(c.steps[i+1].need)}
		}
		out = append(out, s)
	}
	clear(c.steps[len(out):])
	c.steps = out
	c.recountSteps()
}

// covered returns the highest LSN at or below which every record of the
// finished prefix needs at most index (and nothing unknown).
func (c *cover) covered(index uint64) wal.LSN {
	l := c.base
	for _, s := range c.steps {
		if s.need.unknown() || s.need.index > index {
			break
		}
		l = s.last
	}
	return l
}

// forget drops what is known of records at or below lsn.
func (c *cover) forget(lsn wal.LSN) {
	if lsn <= c.base {
		return
	}
	c.base = lsn
	k := 0
	for k < len(c.steps) && c.steps[k].last <= lsn {
		k++
	}
	c.steps = append(c.steps[:0], c.steps[k:]...)
	c.recountSteps()
}

func (c *cover) countUnknown(n need, d int) {
	if n.unknown() {
		c.unknownDone += d
	}
}

// resolveSteps bounds unknown steps with an epoch ≤ epoch by index.
func (c *cover) resolveSteps(index, epoch uint64) {
	if c.unknownSteps == 0 {
		return
	}
	for i := range c.steps {
		if n := c.steps[i].need; n.unknown() && n.epoch <= epoch {
			c.steps[i].need = need{index: max(n.index, index)}
			c.unknownSteps--
		}
	}
}

// resolve records that an attempt started at epoch committed an entry at
// index: every unknown need of an epoch ≤ epoch is at most index.
func (t *lsnTracker) resolve(index, epoch uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.unknownDone > 0 {
		for lsn, n := range t.done {
			if n.unknown() && n.epoch <= epoch {
				t.done[lsn] = need{index: max(n.index, index)}
				t.unknownDone--
			}
		}
	}
	t.resolveSteps(index, epoch)
}

// coveredBy returns the highest LSN L such that every record at or below
// L has finished, and none needs an index above index or an unknown one.
func (t *lsnTracker) coveredBy(index uint64) wal.LSN {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.covered(index)
}

// forgetUpTo drops what is known of records at or below lsn (compacted).
func (t *lsnTracker) forgetUpTo(lsn wal.LSN) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forget(min(lsn, t.mark))
}

// base returns the highest LSN forgotten.
func (t *lsnTracker) base() wal.LSN {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cover.base
}
