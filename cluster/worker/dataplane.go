package worker

import (
	"encoding/base64"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/progress"
)

// Progress over the data plane (issue 14): when the registration answer
// carries data_plane access, a running workflow only records its counters
// in the session's progress.Sender, and one loop per session sends all of
// them every ProgressInterval, stretched by the heartbeat's backpressure.
// Counters are cumulative, so a lost frame is made good by the next; a
// lease that moved on is learned from the heartbeat's stop list (frames
// get no answer). The end of a workflow still goes over HTTP: it must be
// acknowledged.

// How a worker sends progress (Config.Progress).
const (
	ProgressUDP  = "udp"  // data-plane frames over UDP (the default)
	ProgressTCP  = "tcp"  // data-plane frames over TCP, where UDP is blocked
	ProgressHTTP = "http" // one HTTP call per workflow and interval
)

// maxFlushFailures failed sends in a row send the rest of the session's
// progress back over HTTP (the manager that answered the registration is
// gone or unreachable; the next registration tries the data plane again).
const maxFlushFailures = 3

// sessionSender is a session's data-plane sender: UDP first, TCP when
// the stall judge finds UDP blocked, HTTP when TCP fails or stalls too.
type sessionSender struct {
	failed atomic.Bool // fell back to HTTP

	mu      sync.Mutex
	s       *progress.Sender
	network string
	tcpAddr string
	enc     progress.EncoderConfig
	flushed map[string]uint64 // totals sent by the last good flush
	before  map[string]uint64 // flushed as of the previous heartbeat
	judge   stallJudge
}

// current is the sender in use.
func (ss *sessionSender) current() *progress.Sender {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.s
}

// flushed records the totals a good flush of s sent.
func (ss *sessionSender) sent(s *progress.Sender) {
	totals := map[string]uint64{}
	for _, u := range s.Updates() {
		totals[u.Workflow] = u.Completed + u.Failed
	}
	ss.mu.Lock()
	if ss.s == s {
		ss.flushed = totals
	}
	ss.mu.Unlock()
}

// close closes the sender in use.
func (ss *sessionSender) close() { _ = ss.current().Close() }

// checkProgress refuses an unknown Config.Progress.
func checkProgress(p string) error {
	switch p {
	case "", ProgressUDP, ProgressTCP, ProgressHTTP:
		return nil
	}
	return fmt.Errorf("progress %q: want %s, %s or %s", p, ProgressUDP, ProgressTCP, ProgressHTTP)
}

// openSender returns the session's sender, nil when progress goes over
// HTTP: configured so, or the manager offers no data plane.
func (r *Runner) openSender(resp *api.RegisterWorkerResponse) *sessionSender {
	dp := resp.DataPlane
	if r.cfg.Progress == ProgressHTTP || dp == nil {
		return nil
	}
	network, addr := ProgressUDP, dp.UDPAddr
	if r.cfg.Progress == ProgressTCP {
		network, addr = ProgressTCP, dp.TCPAddr
	}
	key, err := base64.StdEncoding.DecodeString(dp.Key)
	enc := progress.EncoderConfig{Worker: resp.WorkerID, KeyID: dp.KeyID, Key: key}
	var s *progress.Sender
	if err == nil {
		s, err = progress.NewSender(progress.SenderConfig{Addr: addr, Network: network, Encoder: enc})
	}
	if err != nil {
		r.log.Warn("data plane unusable: progress goes over HTTP", "worker", resp.WorkerID, "addr", addr, "err", err)
		return nil
	}
	r.log.Info("progress over the data plane", "worker", resp.WorkerID, "network", network, "addr", addr)
	return &sessionSender{s: s, network: network, tcpAddr: dp.TCPAddr, enc: enc,
		judge: stallJudge{window: r.cfg.StallWindow}}
}

// sendProgress records a workflow's counters for the session's next
// flush; false when progress goes over HTTP.
func (r *Runner) sendProgress(rn *run, completed, failed uint64) bool {
	ss := rn.sess.sender
	if ss == nil || ss.failed.Load() {
		return false
	}
	err := ss.current().Set(progress.Update{Workflow: rn.key.workflow, Fence: rn.key.fence, Completed: completed, Failed: failed,
		Histogram: Latency(completed + failed)})
	return err == nil
}

// dropProgress stops sending rn's counters (its end goes over HTTP).
func (r *Runner) dropProgress(rn *run) {
	if ss := rn.sess.sender; ss != nil {
		ss.current().Remove(rn.key.workflow)
	}
}

// judgeDataPlane takes a heartbeat's recorded counters: when the data
// plane has delivered nothing for the stall window, UDP gives way to TCP
// and TCP to HTTP for the rest of the registration.
func (r *Runner) judgeDataPlane(s *session, resp *api.HeartbeatResponse) {
	ss := s.sender
	if ss == nil || ss.failed.Load() {
		return
	}
	ss.mu.Lock()
	before := ss.before
	ss.before = ss.flushed
	stalled := ss.judge.observe(r.now(), before, resp.Recorded, resp.Backpressure == api.BackpressureNone)
	network := ss.network
	ss.mu.Unlock()
	if !stalled {
		return
	}
	if network == ProgressUDP && ss.tcpAddr != "" {
		if err := ss.switchToTCP(); err == nil {
			r.log.Warn("progress frames over UDP are not arriving: switching to TCP", "worker", s.id, "addr", ss.tcpAddr)
			return
		}
	}
	ss.failed.Store(true)
	r.log.Warn("progress frames are not arriving: progress goes over HTTP for this registration", "worker", s.id, "network", network)
}

// switchToTCP replaces the UDP sender by a TCP one holding the same
// counters.
func (ss *sessionSender) switchToTCP() error {
	s, err := progress.NewSender(progress.SenderConfig{Addr: ss.tcpAddr, Network: ProgressTCP, Encoder: ss.enc})
	if err != nil {
		return err
	}
	ss.mu.Lock()
	old := ss.s
	for _, u := range old.Updates() {
		_ = s.Set(u) // valid: old held it
	}
	ss.s, ss.network, ss.flushed, ss.before = s, ProgressTCP, nil, nil
	ss.mu.Unlock()
	return old.Close()
}

// pressureStretch is how many progress intervals a flush waits at a
// backpressure level (AD-37): THROTTLE sends less often, BATCH less often
// still (each frame then carries more change), REJECT pauses (0).
func pressureStretch(level string) time.Duration {
	switch level {
	case api.BackpressureThrottle:
		return 2
	case api.BackpressureBatch:
		return 4
	case api.BackpressureReject:
		return 0
	}
	return 1
}

// flushLoop sends the session's counters until the session ends.
func (r *Runner) flushLoop(s *session) {
	ss := s.sender
	if ss == nil {
		return
	}
	defer ss.close()
	t := time.NewTimer(r.cfg.ProgressInterval)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		stretch := pressureStretch(r.backpressure())
		if stretch > 0 {
			cur := ss.current()
			_, err := cur.Flush()
			if err != nil && cur != ss.current() {
				err = nil // replaced (UDP to TCP) while it flushed: not a failure
			}
			if err != nil {
				if failures++; failures >= maxFlushFailures {
					ss.failed.Store(true)
					r.log.Warn("data plane failing: progress goes over HTTP for this registration", "worker", s.id, "err", err)
					return
				}
			} else {
				failures = 0
				ss.sent(cur)
			}
		}
		t.Reset(r.cfg.ProgressInterval * max(stretch, 1))
	}
}

// backpressure is the last level a heartbeat returned.
func (r *Runner) backpressure() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pressure
}
