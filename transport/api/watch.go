package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

// Watching a job: GET /v1/jobs/{id}/watch streams server-sent events. The
// answering gate sends an `event: state` with the job state (the body of
// GET /v1/jobs/{id}) and `id:` its applied index, again whenever its state
// changes, a `: keepalive` comment every WatchKeepalive while nothing
// changes, and ends the stream after the job's terminal state.

// Watch stream contract and client bounds.
const (
	// WatchEventState names the events that carry a job state.
	WatchEventState = "state"
	// WatchKeepalive is how often a server sends a comment while the job
	// does not change, so idle streams survive proxies and a client can
	// tell a quiet stream from a dead one.
	WatchKeepalive = 15 * time.Second
	// watchIdleTimeout: a stream silent for this long (three missed
	// keepalives) is taken as broken and reopened.
	watchIdleTimeout = 3 * WatchKeepalive
	// MaxWatchRetries bounds the reconnections in a row that bring no
	// new event before WatchJob gives up.
	MaxWatchRetries = 8
)

// watchBackoff bounds the pause before a reconnection; it doubles with
// every attempt in a row that brought no new state. A variable so that
// tests can shorten it.
var watchBackoff = struct{ min, max time.Duration }{100 * time.Millisecond, 5 * time.Second}

// errStreamBroken is a watch stream that ended before a terminal state.
var errStreamBroken = errors.New("stream ended before the job's terminal state")

// WatchJob streams a job's state (GET /v1/jobs/{id}/watch): it calls fn
// with the first state and with every newer one, and returns nil after fn
// accepted a terminal state (COMPLETED, FAILED, CANCELLED, TIMED_OUT). A
// stream that breaks before that is reopened, on the next address when
// the node cannot be reached, with a growing backoff and at most
// MaxWatchRetries times in a row without a new state; a state older than
// one already delivered (a lagging node after a reconnection) is skipped.
// An error fn returns ends the watch and is returned as is. A 4xx answer
// (bad id, unknown job, no access) ends it at once with an *Error, except
// a 404 after the job was seen, which a lagging node may answer.
//
// The stream carries the answering gate's applied state (an eventual
// read); pass the session token of a write in WatchJobSession to make the
// first state include that write. A ClientConfig.HTTPClient with a
// Timeout would cut streams: leave its Timeout zero.
func (c *Client) WatchJob(ctx context.Context, id string, fn func(*fsm.JobState) error) error {
	return c.WatchJobSession(ctx, id, "", fn)
}

// WatchJobSession is WatchJob whose first state includes the write that
// returned the session token (consistency=session, DESIGN §8).
func (c *Client) WatchJobSession(ctx context.Context, id, session string, fn func(*fsm.JobState) error) error {
	return c.WatchJobLive(ctx, id, session, fn, nil)
}

// WatchJobLive is WatchJobSession that also hands live, when not nil,
// the job's live statistics each time a gate sends new ones (about every
// second while workers report over the data plane; never durable).
func (c *Client) WatchJobLive(ctx context.Context, id, session string, fn func(*fsm.JobState) error, live func(JobLive) error) error {
	if err := checkID("job id", id); err != nil {
		return err
	}
	if fn == nil {
		return errors.New("watch job: nil callback")
	}
	path := "/v1/jobs/" + url.PathEscape(id) + "/watch"
	w := &watcher{c: c, path: path, session: session, fn: fn, live: live}
	return w.run(ctx)
}

// watcher is one WatchJob call: its last delivered state and its position
// among the addresses.
type watcher struct {
	c       *Client
	path    string
	session string
	fn      func(*fsm.JobState) error
	live    func(JobLive) error
	last    *fsm.JobState
}

func (w *watcher) run(ctx context.Context) error {
	idx := int(w.c.preferred.Load())
	backoff := watchBackoff.min
	var failures []string
	for {
		base := w.c.bases[idx%len(w.c.bases)]
		progressed, err := w.stream(ctx, base)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("GET %s: %w", w.path, ctx.Err())
		case !retryable(err, w.last != nil):
			return unwrapFn(err)
		}
		var ce *connError
		if errors.As(err, &ce) || !progressed {
			// The node cannot serve this watch now: try the next one.
			idx++
		}
		if progressed {
			failures, backoff = nil, watchBackoff.min
		}
		failures = append(failures, base+": "+err.Error())
		if len(failures) > MaxWatchRetries {
			return fmt.Errorf("GET %s: gave up after %d attempts without a new state: %s",
				w.path, len(failures), strings.Join(failures, "; "))
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("GET %s: %w", w.path, ctx.Err())
		case <-t.C:
		}
		backoff = min(2*backoff, watchBackoff.max)
	}
}

// retryable says whether a failed stream is worth reopening: connection
// failures, broken or malformed-at-the-transport streams, 5xx and 429, and
// a 404 once the job was seen.
func retryable(err error, seen bool) bool {
	var ae *Error
	if errors.As(err, &ae) {
		return ae.Status >= 500 || ae.Status == http.StatusTooManyRequests ||
			(seen && ae.Status == http.StatusNotFound)
	}
	var fe *fnError
	return !errors.As(err, &fe) && !errors.Is(err, errProtocol)
}

// fnError carries the callback's error out of stream untouched.
type fnError struct{ err error }

func (e *fnError) Error() string { return e.err.Error() }

// errProtocol is an answer that breaks the watch contract (not an event
// stream, a state event that is not a job state): reconnecting would not
// help.
var errProtocol = errors.New("watch protocol violation")

// stream opens one watch stream on base and delivers its states until the
// terminal one (nil) or a failure; progressed says whether it delivered a
// new state.
func (w *watcher) stream(ctx context.Context, base string) (progressed bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+w.path, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if w.c.token != "" {
		req.Header.Set("Authorization", "Bearer "+w.c.token)
	}
	if w.session != "" {
		req.URL.RawQuery = url.Values{ParamConsistency: {ConsistencySession}}.Encode()
		req.Header.Set(HeaderSession, w.session)
	}
	// Headers must come within the client's per-attempt timeout; the
	// stream itself only must not go silent for watchIdleTimeout.
	headers := time.AfterFunc(w.c.timeout, cancel)
	resp, err := w.c.hc.Do(req)
	headers.Stop()
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return false, &connError{addr: base, sent: true, err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes))
		return false, DecodeError(resp.StatusCode, raw)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return false, fmt.Errorf("GET %s from %s: %w: content type %q, want text/event-stream", w.path, base, errProtocol, ct)
	}
	w.c.preferred.Store(uint32(indexOf(w.c.bases, base)))
	body := newIdleReader(resp.Body, watchIdleTimeout, cancel)
	defer body.stop()
	sr := NewSSEReader(body)
	for {
		ev, err := sr.Next()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = errStreamBroken
			}
			if body.idle.Load() {
				err = fmt.Errorf("no data for %s", watchIdleTimeout)
			}
			return progressed, fmt.Errorf("GET %s from %s: %w", w.path, base, err)
		}
		if ev.Event == WatchEventLive && w.live != nil {
			live, err := decodeLive(ev.Data)
			if err != nil {
				return progressed, fmt.Errorf("GET %s from %s: %w: live event: %v", w.path, base, errProtocol, err)
			}
			if err := w.live(live); err != nil {
				return progressed, &fnError{err}
			}
			continue
		}
		if ev.Event != WatchEventState {
			continue // a later server's other events
		}
		var st fsm.JobState
		if err := json.Unmarshal(ev.Data, &st); err != nil {
			return progressed, fmt.Errorf("GET %s from %s: %w: state event: %v", w.path, base, errProtocol, err)
		}
		if !newerState(w.last, &st) {
			continue
		}
		w.last, progressed = &st, true
		if err := w.fn(&st); err != nil {
			return progressed, &fnError{err}
		}
		if st.Status.Terminal() {
			return progressed, nil
		}
	}
}

// unwrapFn returns the callback's own error.
func unwrapFn(err error) error {
	var fe *fnError
	if errors.As(err, &fe) {
		return fe.err
	}
	return err
}

// newerState says whether s is worth delivering after prev: the first
// state, one with more events, or one as long whose last event differs (a
// node that folded another history). Fewer events is an older view.
func newerState(prev, s *fsm.JobState) bool {
	switch {
	case prev == nil || s.Events > prev.Events:
		return true
	case s.Events < prev.Events:
		return false
	}
	return s.Last != prev.Last || s.Status != prev.Status
}

func indexOf(bases []string, base string) int {
	for i, b := range bases {
		if b == base {
			return i
		}
	}
	return 0
}

// idleReader cancels a stream that yields no bytes for a while: a
// half-open connection would otherwise block a read forever.
type idleReader struct {
	r    io.Reader
	t    *time.Timer
	d    time.Duration
	idle atomic.Bool // the timer fired
}

func newIdleReader(r io.Reader, d time.Duration, cancel func()) *idleReader {
	ir := &idleReader{r: r, d: d}
	ir.t = time.AfterFunc(d, func() {
		ir.idle.Store(true)
		cancel()
	})
	return ir
}

func (ir *idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	if n > 0 {
		ir.t.Reset(ir.d)
	}
	return n, err
}

func (ir *idleReader) stop() { ir.t.Stop() }
