package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/peer"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// GET /v1/jobs/{id}/watch: the job's state as server-sent events. A gate
// streams its own applied state (an eventual read; consistency=session
// makes the first state include the caller's write): one `event: state`
// now, another whenever an applied entry changed the job, a keepalive
// comment while nothing does, and the end of the stream after the job's
// terminal state. A manager relays the stream of a gate of its region.

// Watch limits.
const (
	// MaxWatchers bounds one node's concurrent watch streams (each holds
	// a goroutine and a connection; a manager's relays count too).
	MaxWatchers = 1024
	// MaxWatchersPerToken bounds one token's watch streams on a node, so
	// one token cannot take every slot (429 beyond).
	MaxWatchersPerToken = 64
	// MaxWatchLifetime ends a stream after this long, so no stream is
	// forever; the client reconnects and gets the current state first.
	MaxWatchLifetime = time.Hour
	// watchKeepalive is the comment interval of a quiet stream.
	watchKeepalive = api.WatchKeepalive
	// watchMinInterval spaces a stream's ledger reads: a node applying
	// thousands of entries a second costs each watcher at most one read
	// per interval, and a change is still seen within it.
	watchMinInterval = 100 * time.Millisecond
	// watchLiveInterval is how often a gate's stream looks for new live
	// statistics of its job (they change every flush, 500 ms).
	watchLiveInterval = time.Second
	// watchWriteTimeout bounds one write to a watcher: a client that
	// stops reading loses its stream instead of holding it. Each write
	// sets it afresh, in place of the request's write deadline
	// (deadline.go), so a stream outlives that.
	watchWriteTimeout = 10 * time.Second
)

// watchSet counts a node's watch streams and ends them all when the HTTP
// server shuts down (a drain waits for in-flight requests, and a stream
// would otherwise hold the drain for its whole timeout).
type watchSet struct {
	active atomic.Int64
	limit  atomic.Int64 // 0: MaxWatchers; tests lower it

	mu      sync.Mutex
	byToken map[string]int // streams per token name
}

// acquire takes a stream slot for the token named token: an *APIError
// when the node has MaxWatchers (503: try another node) or the token has
// MaxWatchersPerToken here (429).
func (ws *watchSet) acquire(node, token string) error {
	limit := ws.limit.Load()
	if limit == 0 {
		limit = MaxWatchers
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.byToken[token] >= MaxWatchersPerToken {
		return &httpx.APIError{Status: http.StatusTooManyRequests, Code: httpx.CodeTooMany,
			Message: fmt.Sprintf("token %s already has %d watch streams on node %s", token, MaxWatchersPerToken, node),
			Details: map[string]any{"limit": MaxWatchersPerToken}}
	}
	if ws.active.Load() >= limit {
		return &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable,
			Message: fmt.Sprintf("node %s already serves %d watch streams; try another node", node, limit),
			Details: map[string]any{"limit": limit}}
	}
	if ws.byToken == nil {
		ws.byToken = map[string]int{}
	}
	ws.byToken[token]++
	ws.active.Add(1)
	return nil
}

// release gives back a slot acquire took for token.
func (ws *watchSet) release(token string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.byToken[token]--; ws.byToken[token] <= 0 {
		delete(ws.byToken, token)
	}
	ws.active.Add(-1)
}

// watchContext is r's context, also ended by the node's close, the HTTP
// server's shutdown and MaxWatchLifetime.
func (sv *Server) watchContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(r.Context(), MaxWatchLifetime)
	stop := context.AfterFunc(sv.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

func (sv *Server) handleWatchJob(w http.ResponseWriter, r *http.Request, c *call) {
	p := c.p
	id, ok := jobIDParam(w, r)
	if !ok {
		return
	}
	if err := sv.watches.acquire(sv.cfg.NodeID, p.Name); err != nil {
		httpx.WriteError(w, err)
		return
	}
	defer sv.watches.release(p.Name)
	ctx, cancel := sv.watchContext(r)
	defer cancel()
	if sv.cfg.Role != RoleGate {
		sv.relayWatch(ctx, w, r)
		return
	}
	if !sv.watchPrelude(w, r) {
		return
	}
	index, moved := sv.cfg.Applied.Current()
	s, err := sv.jobs.job(p, id)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	sv.streamJob(ctx, w, s, index, moved)
}

// watchPrelude accepts consistency=eventual (the default of a watch) or
// session, and waits for the session's index; false when it answered.
func (sv *Server) watchPrelude(w http.ResponseWriter, r *http.Request) bool {
	switch c := r.URL.Query().Get(api.ParamConsistency); c {
	case "", api.ConsistencyEventual, api.ConsistencySession:
	default:
		httpx.WriteError(w, httpx.BadRequest("consistency %q: a watch streams the serving node's applied state; use eventual or session", c))
		return false
	}
	o, err := sv.parseReadOpts(r)
	if err != nil {
		httpx.WriteError(w, err)
		return false
	}
	if o.consistency != api.ConsistencySession {
		o.consistency = api.ConsistencyEventual
	}
	return sv.prepareRead(w, r, o)
}

// streamJob sends s (read at applied index or later) and every change of
// its job until the job ends, ctx ends or a write fails.
func (sv *Server) streamJob(ctx context.Context, w http.ResponseWriter, s *fsm.JobState, index uint64, moved <-chan struct{}) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // reverse proxies: do not buffer
	sv.setReadHeaders(w)
	w.WriteHeader(http.StatusOK)
	sw := newSSEWriter(w)
	defer sw.close()
	if err := sw.state(s, index); err != nil || s.Status.Terminal() {
		return
	}
	keepalive := time.NewTimer(watchKeepalive)
	defer keepalive.Stop()
	var liveTick <-chan time.Time // a gate sends the job's live statistics
	if sv.cfg.Live != nil {
		t := time.NewTicker(watchLiveInterval)
		defer t.Stop()
		liveTick = t.C
	}
	var lastLive api.JobLive
	lastRead := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-keepalive.C:
			if sw.comment("keepalive") != nil {
				return
			}
			keepalive.Reset(watchKeepalive)
			continue
		case <-liveTick:
			live := sv.liveOf(s.JobID)
			if live == nil || maps.Equal(live, lastLive) {
				continue
			}
			if sw.live(live, index) != nil {
				return
			}
			lastLive = live
			keepalive.Reset(watchKeepalive)
			continue
		case <-moved:
		}
		if wait := watchMinInterval - time.Since(lastRead); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		index, moved = sv.cfg.Applied.Current()
		cur, err := sv.cfg.Ledger.JobByID(s.JobID)
		lastRead = time.Now()
		if err != nil {
			// A job does not vanish; a store failure ends the stream and
			// the client reconnects (perhaps elsewhere).
			sv.log.Warn("watch: read job", "job", s.JobID, "err", err)
			return
		}
		if !jobChanged(s, cur) {
			continue
		}
		s = cur
		if sw.state(s, index) != nil || s.Status.Terminal() {
			return
		}
		keepalive.Reset(watchKeepalive)
	}
}

// jobChanged says whether a stream must send cur after prev: a job
// changes only by events, which move its count, last event or HLC.
func jobChanged(prev, cur *fsm.JobState) bool {
	return cur.Events != prev.Events || cur.Last != prev.Last || cur.HLC != prev.HLC
}

// sseWriter writes events to a watcher, each bounded by watchWriteTimeout
// and flushed through the instrument wrapper (ResponseController).
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf []byte
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

func (s *sseWriter) state(st *fsm.JobState, index uint64) error {
	data, err := st.MarshalJSON()
	if err != nil {
		return err
	}
	s.buf = appendSSE(s.buf[:0], api.WatchEventState, strconv.FormatUint(index, 10), data)
	return s.send(s.buf)
}

// live sends a job's live statistics (api.WatchEventLive).
func (s *sseWriter) live(live api.JobLive, index uint64) error {
	data, err := json.Marshal(live)
	if err != nil {
		return err
	}
	s.buf = appendSSE(s.buf[:0], api.WatchEventLive, strconv.FormatUint(index, 10), data)
	return s.send(s.buf)
}

func (s *sseWriter) comment(text string) error {
	s.buf = append(append(append(s.buf[:0], ": "...), text...), "\n\n"...)
	return s.send(s.buf)
}

func (s *sseWriter) send(b []byte) error {
	if err := s.rc.SetWriteDeadline(time.Now().Add(watchWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

// close clears the write deadline: the connection may serve another
// request after this one.
func (s *sseWriter) close() { _ = s.rc.SetWriteDeadline(time.Time{}) }

// appendSSE formats one event: event, id, then one data line per line of
// data (an SSE data line cannot hold a newline), then the blank line.
func appendSSE(b []byte, event, id string, data []byte) []byte {
	b = append(append(append(b, "event: "...), event...), '\n')
	b = append(append(append(b, "id: "...), id...), '\n')
	for {
		line, rest, more := strings.Cut(string(data), "\n")
		b = append(append(append(b, "data: "...), line...), '\n')
		if !more {
			break
		}
		data = []byte(rest)
	}
	return append(b, '\n')
}

// relayWatch sends a watch that reached a manager to a gate of its region
// and relays the stream as it comes (proxy buffers through a client
// with a whole-call timeout, which would cut a stream).
func (sv *Server) relayWatch(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	hops := sv.hops(r)
	if len(hops) >= maxForwardHops || slices.Contains(hops, sv.cfg.NodeID) {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable,
			Message: fmt.Sprintf("node %s cannot serve this watch and it was already forwarded by %s", sv.cfg.NodeID, strings.Join(hops, ", "))})
		return
	}
	peers := sv.lanPeers(RoleGate, sv.cfg.Region)
	if len(peers) == 0 {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable,
			Message: fmt.Sprintf("node %s (%s) forwards watches to a gate of region %s, and none is alive", sv.cfg.NodeID, sv.cfg.Role, sv.cfg.Region)})
		return
	}
	start := int(time.Now().UnixNano() % int64(len(peers)))
	var failures []string
	for i := range peers {
		addr := peers[(start+i)%len(peers)].Meta.APIAddr
		sv.extendWriteDeadline(w, peer.CallTimeout) // each gate may take that long to answer
		resp, err := sv.openWatch(ctx, r, addr, hops)
		if err != nil {
			failures = append(failures, addr+": "+err.Error())
			continue
		}
		relayStream(w, resp)
		return
	}
	httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable,
		Message: fmt.Sprintf("node %s forwarded the watch to the gates of region %s: %s", sv.cfg.NodeID, sv.cfg.Region, strings.Join(failures, "; "))})
}

// openWatch sends r to addr; the answer's headers must come within
// peer.CallTimeout, the stream then lasts as long as ctx.
func (sv *Server) openWatch(ctx context.Context, r *http.Request, addr string, hops []string) (*http.Response, error) {
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+r.URL.RequestURI(), nil)
	if err != nil {
		cancel()
		return nil, err
	}
	for _, h := range []string{"Authorization", "Accept", api.HeaderSession} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	sv.setHops(req, hops)
	headers := time.AfterFunc(peer.CallTimeout, cancel)
	resp, err := (&http.Client{Transport: sv.cfg.Peers.HTTPClient().Transport}).Do(req)
	if err != nil || !headers.Stop() {
		cancel()
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("no answer within %s", peer.CallTimeout)
		}
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose releases a relayed request's context with its body.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// relayStream copies the gate's answer to the watcher, flushing every
// chunk as it arrives; an error answer is copied whole (bounded). It
// closes the answer's body.
func relayStream(w http.ResponseWriter, resp *http.Response) {
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(w, io.LimitReader(resp.Body, maxProxyResponse))
		return
	}
	sw := newSSEWriter(w)
	defer sw.close()
	buf := make([]byte, 32<<10)
	for {
		k, err := resp.Body.Read(buf)
		if k > 0 && sw.send(buf[:k]) != nil {
			return
		}
		if err != nil {
			return
		}
	}
}

// ActiveWatches is the number of watch streams this node serves (its
// relays included).
func (sv *Server) ActiveWatches() int64 { return sv.watches.active.Load() }

// SetMaxWatchers bounds the watch streams from now on; 0 restores
// MaxWatchers. Streams already open stay.
func (sv *Server) SetMaxWatchers(n int64) { sv.watches.limit.Store(n) }
