package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// fakeWorkerAPI answers the worker control plane of one manager: it
// registers anyone (or refuses with refuse), hands out no leases, and
// records each call as "METHOD PATH Authorization".
type fakeWorkerAPI struct {
	srv    *httptest.Server
	refuse int
	mu     sync.Mutex
	calls  []string
	seen   chan string // every call, as recorded
}

func newFakeWorkerAPI(t *testing.T, refuse int) *fakeWorkerAPI {
	t.Helper()
	f := &fakeWorkerAPI{refuse: refuse, seen: make(chan string, 1024)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/workers", func(w http.ResponseWriter, r *http.Request) {
		if f.refuse != 0 {
			writeAPIError(w, f.refuse, api.CodeUnauthenticated, "unknown token")
			return
		}
		var req api.RegisterWorkerRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		writeValue(w, http.StatusCreated, api.RegisterWorkerResponse{WorkerID: req.WorkerID, Region: req.Region, Capacity: req.Capacity,
			AckWindow: fsm.Duration(5 * time.Second), HeartbeatInterval: fsm.Duration(time.Second)})
	})
	mux.HandleFunc("POST /v1/workers/{id}/heartbeat", func(w http.ResponseWriter, r *http.Request) {
		writeValue(w, http.StatusOK, api.HeartbeatResponse{Stop: []string{}, Backpressure: api.BackpressureNone})
	})
	mux.HandleFunc("GET /v1/workers/{id}/leases", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("index") != "0" { // nothing new: hold the poll
			<-r.Context().Done()
			return
		}
		writeValue(w, http.StatusOK, api.LeaseList{Index: 1, Leases: []api.Lease{}})
	})
	mux.HandleFunc("DELETE /v1/workers/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeValue(w, http.StatusOK, api.WriteResponse{Durability: "REGIONAL"})
	})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := r.Method + " " + r.URL.Path + " " + r.Header.Get("Authorization")
		f.mu.Lock()
		f.calls = append(f.calls, call)
		f.mu.Unlock()
		select {
		case f.seen <- call:
		default:
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeWorkerAPI) addr() string { return strings.TrimPrefix(f.srv.URL, "http://") }

func (f *fakeWorkerAPI) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// waitCall waits until the fake receives a call starting with prefix.
func (f *fakeWorkerAPI) waitCall(t *testing.T, prefix string) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case c := <-f.seen:
			if strings.HasPrefix(c, prefix) {
				return c
			}
		case <-deadline:
			t.Fatalf("no %s call; calls: %v", prefix, f.recorded())
		}
	}
}

func TestWorker_BadFlagsAreUsageErrors(t *testing.T) {
	isolate(t)
	m := newFakeWorkerAPI(t, 0)
	base := []string{"worker", "--manager", m.addr(), "--token", testToken}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no region", base, "--region is required"},
		{"zero capacity", append(base, "--region", "use1", "--capacity", "0"), "capacity 0"},
		{"capacity over the limit", append(base, "--region", "use1", "--capacity", "1001"), "capacity 1001"},
		{"negative capacity", append(base, "--region", "use1", "--capacity", "-1"), "invalid argument"},
		{"bad region", append(base, "--region", "US-East"), "region"},
		{"bad id", append(base, "--region", "use1", "--id", "w/1"), "worker id"},
		{"bad log level", append(base, "--region", "use1", "--log-level", "loud"), "--log-level"},
		{"bad progress transport", append(base, "--region", "use1", "--progress", "pigeon"), "progress \"pigeon\""},
		{"bad manager address", []string{"worker", "--region", "use1", "--manager", "ftp://x:1"}, "scheme"},
		{"stray argument", append(base, "--region", "use1", "extra"), "unknown command"},
		{"no manager and no cluster file", []string{"worker", "--region", "use1"}, "--manager"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runCLI(t, "", tt.args...)
			wantCode(t, code, exitUsage, errOut)
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr = %q, want it to mention %q", errOut, tt.want)
			}
		})
	}
	if calls := m.recorded(); len(calls) != 0 {
		t.Fatalf("bad flags reached the manager: %v", calls)
	}
}

func TestWorker_DefaultsToTheRegionsManagersOfTheClusterFile(t *testing.T) {
	dir := isolate(t)
	use1, euw1, gate := newFakeWorkerAPI(t, http.StatusUnauthorized), newFakeWorkerAPI(t, 0), newFakeWorkerAPI(t, 0)
	cf := api.ClusterFile{DataDir: ".strata-dev", Token: "file-token-0123456789", Nodes: []api.ClusterNode{
		{NodeID: "use1-gate1", Role: "gate", Region: "use1", APIAddr: gate.addr()},
		{NodeID: "euw1-mgr1", Role: "manager", Region: "euw1", APIAddr: euw1.addr()},
		{NodeID: "use1-mgr1", Role: "manager", Region: "use1", APIAddr: use1.addr()},
	}}
	b, _ := json.Marshal(cf)
	if err := os.MkdirAll(filepath.Join(dir, ".strata-dev"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, devClusterFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	// The use1 manager refuses the token: the worker exits 1 at once.
	_, errOut, code := runCLI(t, "", "worker", "--region", "use1", "--id", "w-use1-1")
	wantCode(t, code, exitError, errOut)
	if !strings.Contains(errOut, "401") || !strings.Contains(errOut, "w-use1-1") {
		t.Errorf("stderr = %q, want the refusal naming the worker", errOut)
	}
	if got := use1.recorded(); len(got) != 1 || got[0] != "POST /v1/workers Bearer file-token-0123456789" {
		t.Errorf("use1 manager calls %v, want one registration with the file's token", got)
	}
	if len(euw1.recorded())+len(gate.recorded()) != 0 {
		t.Errorf("calls went to another region's manager or a gate: %v %v", euw1.recorded(), gate.recorded())
	}

	// A region without managers in the file is a usage error.
	_, errOut, code = runCLI(t, "", "worker", "--region", "apse1")
	wantCode(t, code, exitUsage, errOut)
	if !strings.Contains(errOut, `region "apse1"`) {
		t.Errorf("stderr = %q, want it to name the region", errOut)
	}
}

// workerHelperEnv makes TestWorker_HelperProcess run `strata` with the
// arguments after "--" instead of testing.
const workerHelperEnv = "CMD_STRATA_WORKER_HELPER"

func TestWorker_HelperProcess(t *testing.T) {
	if os.Getenv(workerHelperEnv) != "1" {
		t.Skip("helper process for TestWorker_SIGTERMDeregistersAndExitsZero")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(run(args))
}

func TestWorker_SIGTERMDeregistersAndExitsZero(t *testing.T) {
	m := newFakeWorkerAPI(t, 0)
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorker_HelperProcess$", "--",
		"worker", "--manager", m.addr(), "--region", "use1", "--id", "w-use1-1", "--token", testToken)
	cmd.Env = append(os.Environ(), workerHelperEnv+"=1", "GORACE=atexit_sleep_ms=0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	m.waitCall(t, "POST /v1/workers/w-use1-1/heartbeat")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		if err != nil {
			t.Fatalf("exit %v after SIGTERM, want 0; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("worker still running 10 s after SIGTERM; stderr:\n%s", stderr.String())
	}
	// The deregistration is the worker's last call. A lease long-poll it
	// cancelled on SIGTERM may still reach the manager after it, on its
	// own connection: the manager sees calls of different connections in
	// no particular order, so those are not counted.
	calls := slices.DeleteFunc(m.recorded(), func(c string) bool { return strings.HasPrefix(c, "GET /v1/workers/w-use1-1/leases") })
	if last := calls[len(calls)-1]; last != "DELETE /v1/workers/w-use1-1 Bearer "+testToken {
		t.Fatalf("last call %q, want the deregistration; calls %v", last, calls)
	}
	// JSON logs via slog, one object per line.
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["msg"] == nil {
			t.Fatalf("log line %q is not a JSON record: %v", line, err)
		}
	}
	if !strings.Contains(stderr.String(), `"msg":"deregistered"`) {
		t.Errorf("log lacks the deregistration:\n%s", stderr.String())
	}
}
