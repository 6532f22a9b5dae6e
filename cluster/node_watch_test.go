package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// watchStream is one open GET /v1/jobs/{id}/watch, read in the background.
type watchStream struct {
	resp   *http.Response
	cancel context.CancelFunc
	events chan api.SSEEvent
	err    error // why events closed; read after it closed
}

// openWatch opens a watch on node and checks it started streaming.
func (c *testCluster) openWatch(t *testing.T, node, jobID, token string, header ...string) *watchStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+c.cfg(node).HTTPAddr+"/v1/jobs/"+jobID+"/watch", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	q := req.URL.Query()
	if req.Header.Get(api.HeaderSession) != "" {
		q.Set(api.ParamConsistency, api.ConsistencySession)
	}
	req.URL.RawQuery = q.Encode()
	// No client Timeout (it would cut the stream); the headers must come
	// within nodeTestWait.
	headers := time.AfterFunc(nodeTestWait, cancel)
	resp, err := (&http.Client{}).Do(req)
	headers.Stop()
	if err != nil {
		t.Fatalf("watch on %s: %v", node, err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" ||
		resp.Header.Get("Cache-Control") != "no-cache" {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("watch on %s: %d %v %s", node, resp.StatusCode, resp.Header, b)
	}
	ws := &watchStream{resp: resp, cancel: cancel, events: make(chan api.SSEEvent, 64)}
	go func() {
		defer close(ws.events)
		defer resp.Body.Close()
		r := api.NewSSEReader(resp.Body)
		for {
			ev, err := r.Next()
			if err != nil {
				ws.err = err
				return
			}
			ws.events <- ev
		}
	}()
	return ws
}

// next returns the next state and its id (the applied index).
func (ws *watchStream) next(t *testing.T) (*fsm.JobState, uint64) {
	t.Helper()
	select {
	case ev, ok := <-ws.events:
		if !ok {
			t.Fatalf("stream ended: %v", ws.err)
		}
		if ev.Event != api.WatchEventState {
			t.Fatalf("event %q, want %q", ev.Event, api.WatchEventState)
		}
		var st fsm.JobState
		if err := json.Unmarshal(ev.Data, &st); err != nil {
			t.Fatalf("state %s: %v", ev.Data, err)
		}
		id, err := strconv.ParseUint(ev.ID, 10, 64)
		if err != nil {
			t.Fatalf("id %q: %v", ev.ID, err)
		}
		return &st, id
	case <-time.After(nodeTestWait):
		t.Fatal("no state within", nodeTestWait)
	}
	return nil, 0
}

// until reads states until cond holds; the states must come in order
// (more events, a higher or equal index each time).
func (ws *watchStream) until(t *testing.T, prev *fsm.JobState, prevID uint64, what string, cond func(*fsm.JobState) bool) (*fsm.JobState, uint64) {
	t.Helper()
	for {
		st, id := ws.next(t)
		if st.Events <= prev.Events || id < prevID {
			t.Fatalf("waiting for %s: state with %d events at index %d after %d events at index %d", what, st.Events, id, prev.Events, prevID)
		}
		prev, prevID = st, id
		if cond(st) {
			return st, id
		}
		if st.Status.Terminal() {
			t.Fatalf("waiting for %s: job ended %s", what, st.Status)
		}
	}
}

// ended waits for the stream's end and returns why.
func (ws *watchStream) ended(t *testing.T) error {
	t.Helper()
	deadline := time.After(nodeTestWait)
	for {
		select {
		case ev, ok := <-ws.events:
			if !ok {
				return ws.err
			}
			t.Fatalf("event after the end: %s %s", ev.Event, ev.Data)
		case <-deadline:
			t.Fatal("stream did not end within", nodeTestWait)
		}
	}
}

// proposeJobEvent commits a job event of acme's job through the global
// leader's pipeline, as the job lifecycle would.
func (c *testCluster) proposeJobEvent(t *testing.T, jobID string, fence uint64, body fsm.Body) {
	t.Helper()
	lead := c.node(c.leader(RoleGate))
	ts, err := lead.clock.Now()
	if err != nil {
		t.Fatal(err)
	}
	e := fsm.Event{ID: commit.NewEventID(), Type: body.EventType(), JobID: jobID, Tenant: "acme", Region: "use1",
		Node: lead.cfg.NodeID, HLC: ts, Fence: fence, Body: body}
	ctx, cancel := context.WithTimeout(context.Background(), nodeTestWait)
	defer cancel()
	res, err := lead.pipe.Submit(ctx, []fsm.Event{e}, commit.DurabilityGlobal)
	// Duplicate: an attempt committed but its answer was lost (a slow
	// machine's attempt timeout) and the pipeline's retry found it applied.
	if err != nil || len(res.Results) != 1 || (res.Results[0].Outcome != fsm.OutcomeApplied && res.Results[0].Outcome != fsm.OutcomeDuplicate) {
		t.Fatalf("propose %s: %v %+v", e.Type, err, res.Results)
	}
}

// submitWatched submits a job of acme and returns its id and session.
func (c *testCluster) submitWatched(t *testing.T, key string) (string, string) {
	t.Helper()
	r := c.submitJob("g1", "", key)
	var sub api.SubmitJobResponse
	r.decode(t, &sub)
	if r.status != http.StatusCreated || sub.Session == "" {
		t.Fatalf("submit: %d %s", r.status, r.body)
	}
	return sub.JobID, sub.Session
}

func TestWatch(t *testing.T) {
	c := startTestCluster(t, 239)

	t.Run("streams changes in order and ends at the terminal state", func(t *testing.T) {
		jobID, session := c.submitWatched(t, "watch-1")
		gate := c.openWatch(t, "g2", jobID, testAcmeToken, api.HeaderSession, session)
		relayed := c.openWatch(t, "m1", jobID, testReaderToken, api.HeaderSession, session) // manager → gate
		streams := map[string]*watchStream{"gate": gate, "manager": relayed}
		type pos struct {
			st *fsm.JobState
			id uint64
		}
		at := map[string]pos{}
		for name, ws := range streams {
			st, id := ws.next(t)
			if st.JobID != jobID || st.Status != fsm.JobStatusPending || st.Events != 1 || id == 0 {
				t.Fatalf("%s: first state %s with %d events at index %d", name, st.Status, st.Events, id)
			}
			at[name] = pos{st, id}
		}
		steps := []struct {
			what  string
			fence uint64
			body  fsm.Body
			cond  func(*fsm.JobState) bool
		}{
			{"accepted", 1, &fsm.JobAccepted{Region: "use1", WorkerCount: 2},
				func(s *fsm.JobState) bool {
					return s.Status == fsm.JobStatusRunning && s.Region("use1").WorkerCount == 2
				}},
			{"progress", 1, &fsm.JobProgressReported{Region: "use1", Completed: 700, Failed: 3},
				func(s *fsm.JobState) bool { return s.Region("use1").Completed == 700 && s.Region("use1").Failed == 3 }},
			// Not Done: a region's done report lets the global
			// reconciler complete the job itself.
			{"more progress", 1, &fsm.JobProgressReported{Region: "use1", Completed: 24_000, Failed: 5},
				func(s *fsm.JobState) bool { return s.Region("use1").Completed == 24_000 }},
			{"completed", 2, &fsm.JobCompleted{FinalStatus: "COMPLETED", Aggregate: fsm.Aggregate{Completed: 24_000, Failed: 5}},
				func(s *fsm.JobState) bool { return s.Status == fsm.JobStatusCompleted }},
		}
		for _, step := range steps {
			c.proposeJobEvent(t, jobID, step.fence, step.body)
			for name, ws := range streams {
				p := at[name]
				st, id := ws.until(t, p.st, p.id, name+" "+step.what, step.cond)
				at[name] = pos{st, id}
			}
		}
		for name, ws := range streams {
			if err := ws.ended(t); err != io.EOF {
				t.Fatalf("%s: stream ended with %v, want a clean end after COMPLETED", name, err)
			}
		}

		// A job that already ended: its state, then the end.
		done := c.openWatch(t, "g1", jobID, testAcmeToken, api.HeaderSession, session)
		if st, _ := done.next(t); st.Status != fsm.JobStatusCompleted {
			t.Fatalf("ended job: %s", st.Status)
		}
		if err := done.ended(t); err != io.EOF {
			t.Fatalf("ended job: stream ended with %v", err)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		jobID, session := c.submitWatched(t, "watch-2")
		c.waitFor("g3 applied the job", func() bool { _, err := c.node("g3").ledger.JobByID(jobID); return err == nil })
		missing := "use1-1700000000000-g1-00999"
		tests := []struct {
			name, node, path, token string
			status                  int
			header                  []string
		}{
			{"unknown job", "g3", "/v1/jobs/" + missing + "/watch", testAcmeToken, 404, nil},
			{"unknown job via a manager", "m2", "/v1/jobs/" + missing + "/watch", testAcmeToken, 404, nil},
			{"bad id", "g3", "/v1/jobs/not-a-job/watch", testAcmeToken, 400, nil},
			{"other tenant", "g3", "/v1/jobs/" + jobID + "/watch", testGlobexToken, 404, nil},
			{"other tenant via a manager", "m3", "/v1/jobs/" + jobID + "/watch", testGlobexToken, 404, nil},
			{"no token", "g3", "/v1/jobs/" + jobID + "/watch", "", 401, nil},
			{"strong consistency", "g3", "/v1/jobs/" + jobID + "/watch?consistency=strong", testAcmeToken, 400, nil},
			{"session without token", "g3", "/v1/jobs/" + jobID + "/watch?consistency=session", testAcmeToken, 400, nil},
			{"session of another group", "g3", "/v1/jobs/" + jobID + "/watch", testAcmeToken, 400, []string{api.HeaderSession, "use1:1"}},
			{"wrong method", "g3", "/v1/jobs/" + jobID + "/watch", testAcmeToken, 405, []string{"X-Method", "POST"}},
		}
		for _, tt := range tests {
			method := "GET"
			if len(tt.header) == 2 && tt.header[0] == "X-Method" {
				method, tt.header = tt.header[1], nil
			}
			r := c.call(tt.node, method, tt.path, tt.token, nil, tt.header...)
			if r.status != tt.status {
				t.Errorf("%s: %d %s, want %d", tt.name, r.status, r.body, tt.status)
				continue
			}
			r.apiError(t)
		}
		_ = session
	})

	t.Run("a disconnect frees the slot; the limit answers 503", func(t *testing.T) {
		jobID, session := c.submitWatched(t, "watch-3")
		g3, m2 := c.node("g3"), c.node("m2")
		direct := c.openWatch(t, "g3", jobID, testAcmeToken, api.HeaderSession, session)
		direct.next(t)
		relayed := c.openWatch(t, "m2", jobID, testAcmeToken, api.HeaderSession, session)
		relayed.next(t)
		if n := m2.api.ActiveWatches(); n != 1 {
			t.Fatalf("m2 counts %d watches, want 1", n)
		}
		direct.cancel()
		relayed.cancel()
		c.waitFor("every watch slot freed", func() bool {
			var n int64
			for _, cfg := range c.cfgs {
				n += c.node(cfg.NodeID).api.ActiveWatches()
			}
			return n == 0
		})

		g3.api.SetMaxWatchers(1)
		defer g3.api.SetMaxWatchers(0)
		held := c.openWatch(t, "g3", jobID, testAcmeToken, api.HeaderSession, session)
		held.next(t)
		r := c.call("g3", "GET", "/v1/jobs/"+jobID+"/watch", testAcmeToken, nil)
		if r.status != http.StatusServiceUnavailable || r.apiError(t).Code != httpx.CodeUnavailable {
			t.Fatalf("over the limit: %d %s", r.status, r.body)
		}
		held.cancel()
		c.waitFor("g3's slot freed", func() bool { return g3.api.ActiveWatches() == 0 })
	})

	t.Run("a drain ends open streams at once", func(t *testing.T) {
		jobID, session := c.submitWatched(t, "watch-4")
		node := c.followers(RoleGate)[0]
		ws := c.openWatch(t, node, jobID, testAcmeToken, api.HeaderSession, session)
		ws.next(t)
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), nodeTestWait)
		defer cancel()
		if err := c.node(node).Drain(ctx); err != nil {
			t.Fatalf("drain: %v", err)
		}
		if took := time.Since(start); took >= drainTimeout {
			t.Fatalf("drain took %s: the watch held it", took)
		}
		err := ws.ended(t)
		if err == nil || !(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "closed")) {
			t.Fatalf("stream ended with %v", err)
		}
		c.stop(node)
	})
}
