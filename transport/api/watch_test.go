package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

const watchJobID = "use1-1700000000000-gate1-00001"

// watchState is a job state with n events in status st.
func watchState(st fsm.JobStatus, n uint32) *fsm.JobState {
	s := &fsm.JobState{JobID: watchJobID, Tenant: "acme", Status: st, Fence: 1, Events: n,
		Regions: []fsm.RegionState{{Region: "use1", Accepted: n > 1, Completed: uint64(n) * 10}}}
	s.Last.ID[0] = byte(n)
	return s
}

// sseState formats one state event as a server sends it.
func sseState(t *testing.T, s *fsm.JobState, index int) string {
	t.Helper()
	b, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("event: state\nid: %d\ndata: %s\n\n", index, b)
}

// streamServer answers the n-th watch request (from 0) with streams[n]
// as an event stream; past the end, with the last one.
func streamServer(t *testing.T, streams ...string) (*recorder, *atomic.Int32) {
	var calls atomic.Int32
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		i := min(int(calls.Add(1))-1, len(streams)-1)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(streams[i]))
	})
	return rec, &calls
}

// newWatchClient builds a client whose reconnections pause briefly.
func newWatchClient(t *testing.T, addrs ...string) *Client {
	t.Helper()
	saved := watchBackoff
	watchBackoff.min, watchBackoff.max = time.Millisecond, 4*time.Millisecond
	t.Cleanup(func() { watchBackoff = saved })
	c, err := New(ClientConfig{Addrs: addrs, Token: "tok-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// collect watches and returns the statuses fn saw.
func collect(t *testing.T, c *Client) ([]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var seen []string
	err := c.WatchJob(ctx, watchJobID, func(s *fsm.JobState) error {
		seen = append(seen, fmt.Sprintf("%s/%d", s.Status, s.Events))
		return nil
	})
	return seen, err
}

func TestWatchJob_DeliversStatesUntilTerminal(t *testing.T) {
	stream := ": keepalive\n\n" + sseState(t, watchState(fsm.JobStatusPending, 1), 5) +
		sseState(t, watchState(fsm.JobStatusRunning, 2), 6) + ": keepalive\n\n" +
		"event: future\ndata: {}\n\n" + // other event types are ignored
		sseState(t, watchState(fsm.JobStatusCompleted, 3), 9)
	rec, calls := streamServer(t, stream)
	seen, err := collect(t, newWatchClient(t, rec.srv.URL))
	if err != nil || strings.Join(seen, " ") != "PENDING/1 RUNNING/2 COMPLETED/3" || calls.Load() != 1 {
		t.Fatalf("seen %v, err %v, %d requests", seen, err, calls.Load())
	}
	req := rec.requests()[0]
	if req.Path != "/v1/jobs/"+watchJobID+"/watch" || req.Header.Get("Accept") != "text/event-stream" ||
		req.Header.Get("Authorization") != "Bearer tok-0123456789" {
		t.Fatalf("request %+v", req)
	}
}

func TestWatchJob_ReconnectsAfterABreakAndSkipsWhatItSaw(t *testing.T) {
	first := sseState(t, watchState(fsm.JobStatusPending, 1), 5) + sseState(t, watchState(fsm.JobStatusRunning, 2), 6)
	// The second node lags: it starts with an older state, then catches up.
	second := sseState(t, watchState(fsm.JobStatusPending, 1), 4) + sseState(t, watchState(fsm.JobStatusRunning, 2), 6) +
		sseState(t, watchState(fsm.JobStatusCancelled, 4), 8)
	rec, calls := streamServer(t, first, second)
	seen, err := collect(t, newWatchClient(t, rec.srv.URL))
	if err != nil || strings.Join(seen, " ") != "PENDING/1 RUNNING/2 CANCELLED/4" || calls.Load() != 2 {
		t.Fatalf("seen %v, err %v, %d requests", seen, err, calls.Load())
	}
}

func TestWatchJob_FailsOverToTheNextAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	rec, _ := streamServer(t, sseState(t, watchState(fsm.JobStatusFailed, 2), 3))
	seen, err := collect(t, newWatchClient(t, dead, rec.srv.URL))
	if err != nil || strings.Join(seen, " ") != "FAILED/2" {
		t.Fatalf("seen %v, err %v", seen, err)
	}
}

func TestWatchJob_GivesUpAfterRetriesWithoutProgress(t *testing.T) {
	// Every stream ends before a terminal state and repeats what was seen.
	rec, calls := streamServer(t, sseState(t, watchState(fsm.JobStatusRunning, 2), 3))
	seen, err := collect(t, newWatchClient(t, rec.srv.URL))
	if err == nil || !strings.Contains(err.Error(), "gave up") || len(seen) != 1 || int(calls.Load()) != MaxWatchRetries+1 {
		t.Fatalf("seen %v, err %v, %d requests", seen, err, calls.Load())
	}
}

func TestWatchJob_ErrorsEndTheWatch(t *testing.T) {
	notFound := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"code":"not_found","message":"job not found"}}`))
	})
	_, err := collect(t, newWatchClient(t, notFound.srv.URL))
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound || ae.Code != CodeNotFound || len(notFound.requests()) != 1 {
		t.Fatalf("404: err %v after %d requests", err, len(notFound.requests()))
	}

	notSSE := newRecorder(t, nil) // 200 {} as JSON
	if _, err := collect(t, newWatchClient(t, notSSE.srv.URL)); err == nil || !strings.Contains(err.Error(), "text/event-stream") {
		t.Fatalf("JSON answer: %v", err)
	}

	bad, _ := streamServer(t, "event: state\ndata: {not json\n\n")
	if _, err := collect(t, newWatchClient(t, bad.srv.URL)); !errors.Is(err, errProtocol) || len(bad.requests()) != 1 {
		t.Fatalf("bad state: %v after %d requests", err, len(bad.requests()))
	}

	// The callback's error is returned as is, and stops the watch.
	stop := errors.New("enough")
	rec, _ := streamServer(t, sseState(t, watchState(fsm.JobStatusRunning, 2), 3))
	c := newWatchClient(t, rec.srv.URL)
	if err := c.WatchJob(context.Background(), watchJobID, func(*fsm.JobState) error { return stop }); err != stop {
		t.Fatalf("callback error: %v", err)
	}
	if err := c.WatchJob(context.Background(), "", func(*fsm.JobState) error { return nil }); err == nil {
		t.Fatal("empty id accepted")
	}
}

func TestWatchJob_ContextEndsTheWatch(t *testing.T) {
	started := make(chan struct{})
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(sseState(t, watchState(fsm.JobStatusRunning, 2), 3)))
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- newWatchClient(t, rec.srv.URL).WatchJob(ctx, watchJobID, func(*fsm.JobState) error { return nil })
	}()
	<-started
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not end with its context")
	}
}

func TestNewerState(t *testing.T) {
	a, b := watchState(fsm.JobStatusRunning, 2), watchState(fsm.JobStatusRunning, 3)
	other := watchState(fsm.JobStatusRunning, 2)
	other.Last.ID[1] = 9
	for _, tt := range []struct {
		prev, s *fsm.JobState
		want    bool
	}{{nil, a, true}, {a, b, true}, {b, a, false}, {a, a, false}, {a, other, true}} {
		if got := newerState(tt.prev, tt.s); got != tt.want {
			t.Errorf("newerState(%v, %v) = %v", tt.prev, tt.s, got)
		}
	}
}
