package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

func TestJobExitCode(t *testing.T) {
	want := map[fsm.JobStatus]int{
		fsm.JobStatusCompleted: 0, fsm.JobStatusFailed: 3, fsm.JobStatusCancelled: 4, fsm.JobStatusTimedOut: 5,
		fsm.JobStatusRunning: exitError, fsm.JobStatusUnknown: exitError,
	}
	for st, code := range want {
		if got := jobExitCode(st); got != code {
			t.Errorf("jobExitCode(%s) = %d, want %d", st, got, code)
		}
	}
	if err := jobOutcome(&fsm.JobState{JobID: testJobID, Status: fsm.JobStatusCompleted}); err != nil {
		t.Fatalf("COMPLETED: %v", err)
	}
	var ec interface{ ExitCode() int }
	err := jobOutcome(&fsm.JobState{JobID: testJobID, Status: fsm.JobStatusTimedOut})
	if !errors.As(err, &ec) || ec.ExitCode() != exitJobTimedOut || !strings.Contains(err.Error(), "TIMED_OUT") {
		t.Fatalf("TIMED_OUT: %v", err)
	}
}

func TestRegionTotal(t *testing.T) {
	spec := fsm.JobSpec{Workflows: []fsm.WorkflowSpec{
		{Name: "checkout", Count: 4, Duration: fsm.Duration(30 * time.Second), Rate: 200},     // 24,000
		{Name: "browse", Count: 2, Duration: fsm.Duration(1500 * time.Millisecond), Rate: 10}, // 30
	}}
	if got := regionTotal(&spec); got != 24_030 {
		t.Fatalf("total %d, want 24030", got)
	}
	for _, wf := range []fsm.WorkflowSpec{{Count: 0, Duration: fsm.Duration(time.Second), Rate: 5}, {Count: 3, Rate: 5}, {Count: 3, Duration: fsm.Duration(time.Second)}} {
		if got := regionTotal(&fsm.JobSpec{Workflows: []fsm.WorkflowSpec{wf}}); got != 0 {
			t.Errorf("%+v: total %d, want 0 (no estimate)", wf, got)
		}
	}
	st := testJobState(testJobID) // 4 x 200/s x 30s per region
	lines := regionLines(&st)
	if len(lines) != 2 || lines[1].region != "use1" || lines[1].done != 1203 || lines[1].total != 24_000 || lines[1].status != "RUNNING" {
		t.Fatalf("lines %+v", lines)
	}
}

func TestWatchView_DrawsOneBarPerRegion(t *testing.T) {
	st := testJobState(testJobID)
	var plain bytes.Buffer
	if err := newWatchView(&plain, false).show(&st); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(plain.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "RUNNING") || strings.Contains(plain.String(), "\x1b") ||
		!strings.HasPrefix(lines[1], "euw1") || !strings.Contains(lines[1], "0/24000") ||
		!strings.HasPrefix(lines[2], "use1") || !strings.Contains(lines[2], "1203/24000") || !strings.Contains(lines[2], "|") {
		t.Fatalf("plain view:\n%s", plain.String())
	}
	// On a terminal the second state redraws the same three lines.
	var tty bytes.Buffer
	v := newWatchView(&tty, true)
	_ = v.show(&st)
	st.Regions[1].Completed = 24_000
	_ = v.show(&st)
	if !strings.Contains(tty.String(), "\x1b[3A") || !strings.Contains(tty.String(), "100%") {
		t.Fatalf("tty view: %q", tty.String())
	}
	// Without an estimate a region shows its status only.
	st.Spec.Workflows = nil
	plain.Reset()
	_ = newWatchView(&plain, false).show(&st)
	if strings.Contains(plain.String(), "|") || !strings.Contains(plain.String(), "24003 done") {
		t.Fatalf("no estimate:\n%s", plain.String())
	}
}

// watchServer streams RUNNING then the terminal state final.
func watchServer(t *testing.T, final fsm.JobStatus) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/jobs/"+testJobID+"/watch" {
			writeAPIError(w, http.StatusNotFound, "not_found", "no such job")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		st := testJobState(testJobID)
		for i, status := range []fsm.JobStatus{fsm.JobStatusRunning, final} {
			st.Status, st.Events = status, uint32(2+i)
			b, _ := json.Marshal(st)
			fmt.Fprintf(w, "event: state\nid: %d\ndata: %s\n\n", 10+i, b)
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestJobWatch_ExitCodeIsTheOutcome(t *testing.T) {
	isolate(t)
	for status, code := range map[fsm.JobStatus]int{fsm.JobStatusCompleted: 0, fsm.JobStatusFailed: 3,
		fsm.JobStatusCancelled: 4, fsm.JobStatusTimedOut: 5} {
		if got := run([]string{"job", "watch", testJobID, "--addr", watchServer(t, status), "-o", "json"}); got != code {
			t.Errorf("%s: exit %d, want %d", status, got, code)
		}
	}
	if got := run([]string{"job", "watch", missingJobID, "--addr", watchServer(t, fsm.JobStatusCompleted)}); got != exitError {
		t.Errorf("unknown job: exit %d", got)
	}
	if got := run([]string{"job", "watch"}); got != exitUsage {
		t.Errorf("no id: exit %d", got)
	}
}

func TestJobWatch_JSONLines(t *testing.T) {
	isolate(t)
	stdout, stderr, _ := runCLI(t, "", "job", "watch", testJobID, "--addr", watchServer(t, fsm.JobStatusCancelled), "-o", "json")
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(stderr, "ended CANCELLED") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	for i, want := range []string{"RUNNING", "CANCELLED"} {
		var st fsm.JobState
		if err := json.Unmarshal([]byte(lines[i]), &st); err != nil || st.Status.String() != want || st.JobID != testJobID {
			t.Fatalf("line %d %q: %v", i, lines[i], err)
		}
	}
}
