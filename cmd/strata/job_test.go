package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/transport/api"
)

const (
	testJobID     = "use1-1700000000000-gate1-00001"
	missingJobID  = "use1-1700000000000-gate1-00404"
	testToken     = "test-token-0123456789"
	testSessionID = "global:42"
)

// apiRequest is one request the fake API received.
type apiRequest struct {
	Method, Path, Query, Body string
	Header                    http.Header
}

// fakeAPI is a loopback server that records requests and answers like the
// real API v1 (paths, status codes, envelopes, Strata headers).
type fakeAPI struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []apiRequest
}

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(api.HeaderSession, testSessionID)
		writeRaw(w, http.StatusCreated, `{"job_id":"`+testJobID+`","durability":"GLOBAL","hlc":"1700000000000:0:1","session":"`+testSessionID+`","extra":"kept"}`)
	})
	mux.HandleFunc("GET /v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == missingJobID {
			writeAPIError(w, http.StatusNotFound, api.CodeNotFound, "job "+missingJobID+" not found")
			return
		}
		api.ResponseMeta{Index: 9, Leader: "use1-gate1"}.SetHeaders(w.Header())
		writeValue(w, http.StatusOK, testJobState(r.PathValue("id")))
	})
	mux.HandleFunc("GET /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		// Two pages: job 00001 then, after cursor p2, job 00002.
		if r.URL.Query().Get("cursor") == "p2" {
			writeValue(w, http.StatusOK, api.JobList{Jobs: []*fsm.JobState{ptr(testJobState("use1-1700000000000-gate1-00002"))}})
			return
		}
		writeValue(w, http.StatusOK, api.JobList{Jobs: []*fsm.JobState{ptr(testJobState(testJobID))}, NextCursor: "p2"})
	})
	mux.HandleFunc("POST /v1/jobs/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		writeRaw(w, http.StatusOK, `{"job_id":"`+r.PathValue("id")+`","durability":"GLOBAL","hlc":"1700000000000:0:1","session":"global:43","outcome":"applied"}`)
	})
	mux.HandleFunc("GET /v1/jobs/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		writeValue(w, http.StatusOK, api.EventList{Events: testStoredEvents()})
	})
	mux.HandleFunc("GET /v1/cluster/members", func(w http.ResponseWriter, r *http.Request) {
		writeValue(w, http.StatusOK, api.MemberList{Node: "use1-gate1", Members: []api.Member{
			{NodeID: "use1-gate1", Role: "gate", Region: "use1", APIAddr: "127.0.10.1:8080", RaftAddr: "127.0.10.1:7000", Version: "v1", Status: "alive"},
			{NodeID: "use1-mgr1", Role: "manager", Region: "use1", APIAddr: "127.0.10.2:8080", RaftAddr: "127.0.10.2:7000", Version: "v1", Status: "dead"},
		}})
	})
	mux.HandleFunc("GET /v1/cluster/raft", func(w http.ResponseWriter, r *http.Request) {
		writeValue(w, http.StatusOK, api.RaftStatus{Node: "use1-gate1", Groups: []api.RaftGroup{{
			Name: "global", Tier: "GLOBAL", State: "Leader", Leader: "use1-gate1", Term: 3, CommitIndex: 120, AppliedIndex: 119,
			Peers:      []api.RaftPeer{{ID: "use1-gate1", Suffrage: "voter", Leader: true}, {ID: "euw1-gate1", Suffrage: "nonvoter"}},
			Watermarks: map[string]uint64{"last": 50, "global": 48, "applied": 47},
		}}})
	})
	operator := func(w http.ResponseWriter, r *http.Request) {
		writeValue(w, http.StatusOK, api.OperatorResponse{Group: "global", Leader: "use1-gate1", Index: 130})
	}
	mux.HandleFunc("POST /v1/cluster/raft/join", operator)
	mux.HandleFunc("DELETE /v1/cluster/raft/peers/{id}", operator)
	mux.HandleFunc("POST /v1/cluster/raft/transfer-leadership", operator)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, apiRequest{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, string(body), r.Header.Clone()})
		f.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// addr is the server's host:port, as a user would type it.
func (f *fakeAPI) addr() string { return strings.TrimPrefix(f.srv.URL, "http://") }

func (f *fakeAPI) requests() []apiRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]apiRequest(nil), f.reqs...)
}

// only returns the single request the server received.
func (f *fakeAPI) only(t *testing.T) apiRequest {
	t.Helper()
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("server received %d requests, want 1: %+v", len(reqs), reqs)
	}
	return reqs[0]
}

func writeRaw(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func writeValue(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeAPIError(w, http.StatusInternalServerError, api.CodeInternal, err.Error())
		return
	}
	writeRaw(w, status, string(b))
}

func writeAPIError(w http.ResponseWriter, status int, code, msg string) {
	b, _ := json.Marshal(api.ErrorEnvelope{Error: &api.Error{Code: code, Message: msg}})
	writeRaw(w, status, string(b))
}

func ptr[T any](v T) *T { return &v }

func testJobState(id string) fsm.JobState {
	return fsm.JobState{JobID: id, Tenant: "acme", Status: fsm.JobStatusRunning, Fence: 1,
		Spec: fsm.JobSpec{Tenant: "acme", Regions: []string{"euw1", "use1"}, Timeout: fsm.Duration(10 * time.Minute),
			Workflows: []fsm.WorkflowSpec{{Name: "checkout", Count: 4, Duration: fsm.Duration(30 * time.Second), Rate: 200}}},
		Regions: []fsm.RegionState{
			{Region: "euw1"},
			{Region: "use1", Accepted: true, WorkerCount: 4, Completed: 1200, Failed: 3},
		},
		HLC: fsmtest.TS(1_700_000_000_000, 0, 1), Events: 2}
}

func testStoredEvents() []fsm.StoredEvent {
	j := fsmtest.NewJob(testJobID, "acme", 1, "use1")
	return []fsm.StoredEvent{
		{Event: j.Created(), Seq: 1},
		{Event: j.Ev(1, 2, &fsm.JobCancellationRequested{Reason: "stop", Requestor: "ops"}), Seq: 2, Link: fsm.Hash{0xab, 0xcd}},
	}
}

// isolate keeps the caller's environment and working directory out of a
// test: no STRATA_ADDR, no STRATA_TOKEN, no .strata-dev in the directory.
func isolate(t *testing.T) string {
	t.Helper()
	t.Setenv(envAddr, "")
	t.Setenv(envToken, "")
	t.Setenv("USER", "alice")
	dir := t.TempDir()
	t.Chdir(dir)
	return dir
}

// runCLI runs a command line as main does and returns what it printed and
// its exit code; errors are printed to stderr the way run prints them.
func runCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.Execute()
	if err != nil {
		fmt.Fprintln(&errOut, "strata:", err)
	}
	return out.String(), errOut.String(), exitCodeOf(err)
}

// exitCodeOf maps an error to an exit code exactly as run does.
func exitCodeOf(err error) int {
	if err == nil {
		return exitOK
	}
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return exitUsage
	}
	return exitError
}

func wantCode(t *testing.T, got, want int, stderr string) {
	t.Helper()
	if got != want {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s", got, want, stderr)
	}
}

func sameJSON(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("body %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %q: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("JSON = %s\nwant   %s", gb, wb)
	}
}

func TestJobSubmit_FromFlags(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	out, errOut, code := runCLI(t, "", "job", "submit", "--addr", f.addr(), "--token", testToken,
		"--tenant", "acme", "--region", "use1,euw1", "--region", "apse1", "--timeout", "5m",
		"--workflow", "name=checkout,count=4,duration=30s,rate=200,failure_ratio=0.1", "--workflow", "name=browse",
		"--idempotency-key", "k1", "--durability", "LOCAL")
	wantCode(t, code, exitOK, errOut)
	req := f.only(t)
	if req.Method != "POST" || req.Path != "/v1/jobs" || req.Query != "durability=local" {
		t.Errorf("request = %s %s?%s, want POST /v1/jobs?durability=local", req.Method, req.Path, req.Query)
	}
	if a := req.Header.Get("Authorization"); a != "Bearer "+testToken {
		t.Errorf("Authorization = %q", a)
	}
	sameJSON(t, req.Body, `{"tenant":"acme","idempotency_key":"k1","regions":["use1","euw1","apse1"],"timeout":"5m0s",
		"workflows":[{"name":"checkout","count":4,"duration":"30s","rate":200,"failure_ratio":0.1},
		             {"name":"browse","count":1,"duration":"30s","rate":10,"failure_ratio":0}]}`)
	for _, want := range []string{"job_id      " + testJobID, "durability  GLOBAL", "session     " + testSessionID} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

func TestJobSubmit_FromStdinWithKeyOverride(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	spec := `{"tenant":"acme","idempotency_key":"from-file","regions":["use1"],"timeout":"1m",
		"workflows":[{"name":"w","count":2,"duration":"1s","rate":1,"failure_ratio":0}]}`
	_, errOut, code := runCLI(t, spec, "job", "submit", "--addr", f.addr(), "-f", "-", "--idempotency-key", "k2")
	wantCode(t, code, exitOK, errOut)
	sameJSON(t, f.only(t).Body, `{"tenant":"acme","idempotency_key":"k2","regions":["use1"],"timeout":"1m0s",
		"workflows":[{"name":"w","count":2,"duration":"1s","rate":1,"failure_ratio":0}]}`)
}

func TestJobSubmit_FromFile(t *testing.T) {
	dir := isolate(t)
	f := newFakeAPI(t)
	path := filepath.Join(dir, "job.json")
	if err := os.WriteFile(path, []byte(`{"tenant":"t","regions":["use1"],"timeout":"1m","workflows":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "", "job", "submit", "--addr", f.addr(), "-f", path)
	wantCode(t, code, exitOK, errOut)
	sameJSON(t, f.only(t).Body, `{"tenant":"t","regions":["use1"],"timeout":"1m0s","workflows":[]}`)
}

func TestJobSubmit_JSONOutputIsTheServersJSON(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	out, errOut, code := runCLI(t, "", "job", "submit", "--addr", f.addr(), "-o", "json",
		"--tenant", "acme", "--region", "use1", "--workflow", "name=w")
	wantCode(t, code, exitOK, errOut)
	if !strings.Contains(out, `  "extra": "kept"`) {
		t.Fatalf("stdout is not the server's JSON, indented:\n%s", out)
	}
	sameJSON(t, out, `{"job_id":"`+testJobID+`","durability":"GLOBAL","hlc":"1700000000000:0:1","session":"`+testSessionID+`","extra":"kept"}`)
}

func TestJobSubmit_UsageErrorsSendNothing(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	base := []string{"job", "submit", "--addr", f.addr()}
	good := []string{"--tenant", "acme", "--region", "use1", "--workflow", "name=w"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no tenant", []string{"--region", "use1", "--workflow", "name=w"}, "--tenant is required"},
		{"no region", []string{"--tenant", "a", "--workflow", "name=w"}, "--region is required"},
		{"no workflow", []string{"--tenant", "a", "--region", "use1"}, "--workflow is required"},
		{"workflow without name", []string{"--tenant", "a", "--region", "use1", "--workflow", "count=2"}, "name is required"},
		{"workflow bad count", []string{"--tenant", "a", "--region", "use1", "--workflow", "name=w,count=-1"}, `count "-1"`},
		{"workflow unknown key", []string{"--tenant", "a", "--region", "use1", "--workflow", "name=w,speed=3"}, `unknown key "speed"`},
		{"workflow repeated key", []string{"--tenant", "a", "--region", "use1", "--workflow", "name=w,name=v"}, "name given twice"},
		{"zero timeout", append([]string{"--timeout", "0s"}, good...), "--timeout 0s"},
		{"file and flags", []string{"-f", "-", "--tenant", "a"}, "-f and --tenant"},
		{"bad durability", append([]string{"--durability", "forever"}, good...), `durability "forever"`},
		{"bad output", append([]string{"-o", "yaml"}, good...), `-o "yaml"`},
		{"unknown flag", append([]string{"--bogus"}, good...), "unknown flag"},
		{"bad flag value", append([]string{"--timeout", "soon"}, good...), "invalid argument"},
		{"extra argument", append([]string{"extra"}, good...), "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runCLI(t, "", append(base, tt.args...)...)
			wantCode(t, code, exitUsage, errOut)
			if !strings.Contains(errOut, tt.want) {
				t.Fatalf("stderr = %q, want it to contain %q", errOut, tt.want)
			}
		})
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("server received %d requests, want none", n)
	}
}

func TestJobSubmit_MalformedSpecFileIsUsage(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	for _, spec := range []string{`{"tenant":"a","colour":"red"}`, `{"tenant":"a"} {}`, `not json`} {
		_, errOut, code := runCLI(t, spec, "job", "submit", "--addr", f.addr(), "-f", "-")
		wantCode(t, code, exitUsage, errOut)
		if !strings.Contains(errOut, "job spec stdin") {
			t.Errorf("stderr = %q, want it to name the input", errOut)
		}
	}
	_, errOut, code := runCLI(t, "", "job", "submit", "--addr", f.addr(), "-f", "missing.json")
	wantCode(t, code, exitError, errOut)
	if len(f.requests()) != 0 {
		t.Fatal("a bad spec reached the server")
	}
}

func TestJobStatus_SendsReadOptionsAndPrintsState(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	out, errOut, code := runCLI(t, "", "job", "status", testJobID, "--addr", f.addr(), "--session", "global:41")
	wantCode(t, code, exitOK, errOut)
	req := f.only(t)
	if req.Path != "/v1/jobs/"+testJobID || req.Query != "consistency=session" || req.Header.Get(api.HeaderSession) != "global:41" {
		t.Errorf("request = %s?%s session %q", req.Path, req.Query, req.Header.Get(api.HeaderSession))
	}
	for _, want := range []string{"status    RUNNING", "tenant    acme", "use1    RUNNING  4        1200       3",
		"euw1    PENDING  0        0          0", "workflow  checkout count=4 duration=30s rate=200 failure_ratio=0"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

func TestJobStatus_BoundedRead(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	_, errOut, code := runCLI(t, "", "job", "status", testJobID, "--addr", f.addr(), "--consistency", "bounded", "--max-staleness", "250ms")
	wantCode(t, code, exitOK, errOut)
	if q := f.only(t).Query; q != "consistency=bounded&max_staleness=250ms" {
		t.Fatalf("query = %q", q)
	}
}

func TestJobStatus_ServerErrorPrintsItsMessage(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	out, errOut, code := runCLI(t, "", "job", "status", missingJobID, "--addr", f.addr())
	wantCode(t, code, exitError, errOut)
	if want := "strata: 404 not_found: job " + missingJobID + " not found\n"; errOut != want {
		t.Fatalf("stderr = %q, want %q", errOut, want)
	}
	if out != "" {
		t.Fatalf("stdout = %q, want nothing", out)
	}
}

func TestJobStatus_UsageErrors(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no id", nil, "accepts 1 arg"},
		{"bad consistency", []string{testJobID, "--consistency", "linear"}, `consistency "linear"`},
		{"staleness without bounded", []string{testJobID, "--consistency", "strong", "--max-staleness", "1s"}, "bounded reads only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runCLI(t, "", append([]string{"job", "status", "--addr", f.addr()}, tt.args...)...)
			wantCode(t, code, exitUsage, errOut)
			if !strings.Contains(errOut, tt.want) {
				t.Fatalf("stderr = %q, want %q", errOut, tt.want)
			}
		})
	}
}

func TestJobList_OnePageThenAll(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	out, errOut, code := runCLI(t, "", "job", "list", "--addr", f.addr(), "--tenant", "acme", "--status", "running",
		"--region", "use1", "--limit", "1")
	wantCode(t, code, exitOK, errOut)
	if q := f.only(t).Query; q != "limit=1&region=use1&status=RUNNING&tenant=acme" {
		t.Errorf("query = %q", q)
	}
	if !strings.Contains(out, testJobID) || strings.Contains(out, "00002") || !strings.Contains(errOut, "--cursor p2") {
		t.Errorf("one page: stdout\n%s\nstderr\n%s", out, errOut)
	}
	if !strings.Contains(out, "euw1,use1  1200       3") {
		t.Errorf("stdout lacks the regions and summed progress:\n%s", out)
	}

	out, errOut, code = runCLI(t, "", "job", "list", "--addr", f.addr(), "--all", "-o", "json")
	wantCode(t, code, exitOK, errOut)
	var all api.JobList
	if err := json.Unmarshal([]byte(out), &all); err != nil {
		t.Fatalf("stdout is not a job list: %v\n%s", err, out)
	}
	if len(all.Jobs) != 2 || all.Jobs[1].JobID != "use1-1700000000000-gate1-00002" {
		t.Fatalf("--all listed %d jobs: %s", len(all.Jobs), out)
	}
	reqs := f.requests()
	if got := reqs[len(reqs)-1].Query; got != "cursor=p2" {
		t.Errorf("second page query = %q, want cursor=p2", got)
	}
}

func TestJobList_BadStatusIsUsage(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	_, errOut, code := runCLI(t, "", "job", "list", "--addr", f.addr(), "--status", "sleeping")
	wantCode(t, code, exitUsage, errOut)
}

func TestJobCancel(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	out, errOut, code := runCLI(t, "", "job", "cancel", testJobID, "--addr", f.addr(), "--reason", "wrong region", "--durability", "local")
	wantCode(t, code, exitOK, errOut)
	req := f.only(t)
	if req.Method != "POST" || req.Path != "/v1/jobs/"+testJobID+"/cancel" || req.Query != "durability=local" {
		t.Errorf("request = %s %s?%s", req.Method, req.Path, req.Query)
	}
	sameJSON(t, req.Body, `{"reason":"wrong region","requestor":"alice"}`)
	for _, want := range []string{"outcome     applied", "session     global:43"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

func TestJobEvents(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	out, errOut, code := runCLI(t, "", "job", "events", testJobID, "--addr", f.addr(), "--limit", "50", "--consistency", "strong")
	wantCode(t, code, exitOK, errOut)
	if req := f.only(t); req.Path != "/v1/jobs/"+testJobID+"/events" || req.Query != "consistency=strong&limit=50" {
		t.Errorf("request = %s?%s", req.Path, req.Query)
	}
	for _, want := range []string{"JobCreated", "JobCancellationRequested", "abcd00000000"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

func TestRun_ExitCodes(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"ok", []string{"members", "--addr", f.addr(), "-o", "json"}, exitOK},
		{"server error", []string{"job", "status", missingJobID, "--addr", f.addr()}, exitError},
		{"usage", []string{"job", "status"}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(tt.args); got != tt.want {
				t.Fatalf("run(%q) = %d, want %d", tt.args, got, tt.want)
			}
		})
	}
}

// A queued submit (202: over quota, waiting PENDING) says so and why.
func TestJobSubmit_QueuedSaysSo(t *testing.T) {
	isolate(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeRaw(w, http.StatusAccepted, `{"job_id":"`+testJobID+`","durability":"GLOBAL","hlc":"1700000000000:0:1",`+
			`"queued":true,"status":"PENDING","queued_by":"max_active","next_eligible_at":"2026-11-25T20:00:00Z"}`)
	}))
	t.Cleanup(srv.Close)
	out, errOut, code := runCLI(t, "", "job", "submit", "--addr", srv.Listener.Addr().String(), "--token", testToken,
		"--tenant", "acme", "--region", "use1", "--workflow", "name=w")
	wantCode(t, code, exitOK, errOut)
	for _, want := range []string{"queued            true (max_active)", "next_eligible_at  2026-11-25T20:00:00Z"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}
