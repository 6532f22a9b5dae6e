package progress

import "time"

// senderID names one sequence of frames: a worker under one key.
type senderID struct {
	worker string
	keyID  uint32
}

// seqWindow remembers the newest seq of a sender and which of the 64
// before it were seen, to tell reordered frames from duplicates (as an
// IPsec replay window does). It only feeds metrics.
type seqWindow struct {
	newest uint64
	seen   uint64 // bit i: newest-i was seen
}

// observe records seq and returns the frame's result.
func (w *seqWindow) observe(seq uint64) string {
	switch {
	case seq > w.newest:
		shift := seq - w.newest
		if shift >= 64 {
			w.seen = 0
		} else {
			w.seen <<= shift
		}
		w.seen |= 1
		w.newest = seq
		return ResultFolded
	case w.newest-seq >= 64:
		return ResultReordered
	}
	bit := uint64(1) << (w.newest - seq)
	if w.seen&bit != 0 {
		return ResultDuplicate
	}
	w.seen |= bit
	return ResultReordered
}

// foldLoop owns the aggregates: it folds queued frames in batches and runs
// requests between batches, until the queue is closed.
func (r *Receiver) foldLoop() {
	defer close(r.folded)
	for {
		select {
		case fb, ok := <-r.queue:
			if !ok {
				return
			}
			start := time.Now()
			r.foldFrame(fb)
			for range foldBatchFrames - 1 {
				select {
				case fb, ok = <-r.queue:
				default:
					ok = false
				}
				if !ok {
					break
				}
				r.foldFrame(fb)
			}
			r.m.fold.Observe(time.Since(start).Seconds())
		case req := <-r.reqs:
			req.fn(r.agg)
			close(req.done)
		}
	}
}

// foldFrame decodes and verifies one frame, checks each update's lease and
// folds the ones that hold.
func (r *Receiver) foldFrame(fb *frameBuf) {
	if r.afterFrame != nil {
		defer r.afterFrame()
	}
	frame := fb.b[:fb.n]
	if fb.n > r.cfg.MaxFrameBytes {
		r.bufs.Put(fb)
		r.m.drop(ReasonTooLarge, 1)
		return
	}
	h, views, err := r.dec.Open(frame)
	r.bufs.Put(fb) // the views point into the decoder, not the frame
	if err != nil {
		r.m.drop(reasonOf(err), 1)
		return
	}
	r.m.frame(r.observeSeq(h))
	wa := r.agg.workers[h.Worker]
	folded, stale := 0, 0
	for i := range views {
		v := &views[i]
		var e *entry
		var workflow string
		if wa != nil {
			e, workflow = wa.lookup(v.Workflow)
		} else {
			workflow = string(v.Workflow)
		}
		if !r.cfg.Leases.Holds(h.Worker, workflow, v.Fence) {
			stale++
			continue
		}
		if e == nil {
			if wa == nil {
				wa = r.agg.workerAggs(h.Worker)
			}
			e = r.agg.insert(wa, workflow)
		}
		r.agg.merge(e, v.Fence, v.Completed, v.Failed, v.Histogram)
		folded++
	}
	if stale > 0 {
		r.m.drop(ReasonStaleFence, stale)
	}
	r.m.folded(folded)
}

func (r *Receiver) observeSeq(h Header) string {
	id := senderID{worker: h.Worker, keyID: h.KeyID}
	w := r.seqs[id]
	if w == nil {
		if len(r.seqs) >= MaxTrackedSenders {
			clear(r.seqs)
		}
		w = &seqWindow{}
		r.seqs[id] = w
	}
	return w.observe(h.Seq)
}
