package devcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// subnetControl is the control test's region (one region of one gate and
// one manager): 127.0.116.x (118 is the cluster package's clock-skew test;
// make chaos-dev, never part of make test, takes 114-116).
const subnetControl = 116

// procState reads the state letter of /proc/PID/stat ("T": stopped).
func procState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// pid (comm) state ...: comm may hold spaces, so cut after the last ')'.
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
}

// stoppedWithin polls pid's state until it is stopped (want true) or not,
// bounded: a signal's effect is asynchronous.
func stoppedWithin(t *testing.T, pid int, want bool) bool {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for (procState(t, pid) == "T") != want {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

func TestControl_VerbsActOnTheLaunchersProcesses(t *testing.T) {
	// A short data dir: the socket path must fit sun_path.
	dir, err := os.MkdirTemp("", "dc-ctl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c := newTestClusterWith(t, dir, subnetControl, func(o *Options) { o.Regions = []string{"use1"} })
	if err := c.Start(startCtx(t)); err != nil {
		t.Fatal(err)
	}
	srv, err := ServeControl(c.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if m := fileMode(t, srv.Path()); m != 0o600 {
		t.Fatalf("control socket mode %v, want 0600", m)
	}
	if _, err := ServeControl(c.Cluster); err == nil {
		t.Fatal("a second control server on the same data dir started")
	}
	ctx := startCtx(t)
	cc, err := DialControl(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	procs, err := cc.Processes(ctx)
	if err != nil || len(procs) != 2 {
		t.Fatalf("Processes = %+v, %v; want 2", procs, err)
	}
	mgr := procs[1]
	if mgr.Role != "manager" || mgr.PID == 0 || mgr.PID != c.PID(mgr.ID) {
		t.Fatalf("manager entry %+v, launcher pid %d", mgr, c.PID(mgr.ID))
	}

	p, err := cc.Do(ctx, mgr.ID, VerbPause)
	if err != nil || !p.Paused || !stoppedWithin(t, mgr.PID, true) {
		t.Fatalf("pause: %+v %v, state %s", p, err, procState(t, mgr.PID))
	}
	if _, err := cc.Do(ctx, mgr.ID, VerbPause); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("second pause: %v, want 409", err)
	}
	if p, err = cc.Do(ctx, mgr.ID, VerbResume); err != nil || p.Paused || !stoppedWithin(t, mgr.PID, false) {
		t.Fatalf("resume: %+v %v, state %s", p, err, procState(t, mgr.PID))
	}
	// Kill reaches a paused process; the exit is the launcher's own doing,
	// so it is not reported as unexpected.
	if _, err := cc.Do(ctx, mgr.ID, VerbPause); err != nil {
		t.Fatal(err)
	}
	if p, err = cc.Do(ctx, mgr.ID, VerbKill); err != nil || p.PID != 0 || p.Paused {
		t.Fatalf("kill: %+v %v", p, err)
	}
	if _, err := cc.Do(ctx, mgr.ID, VerbPause); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("pause of a killed node: %v, want 409", err)
	}
	if p, err = cc.Do(ctx, mgr.ID, VerbStart); err != nil || p.PID == 0 || p.PID == mgr.PID {
		t.Fatalf("start: %+v %v (old pid %d)", p, err, mgr.PID)
	}
	if err := c.WaitReady(ctx, mgr.ID); err != nil {
		t.Fatal(err)
	}
	// Restart of a paused node resumes it first, or SIGTERM would wait.
	if _, err := cc.Do(ctx, mgr.ID, VerbPause); err != nil {
		t.Fatal(err)
	}
	old := c.PID(mgr.ID)
	if p, err = cc.Do(ctx, mgr.ID, VerbRestart); err != nil || p.PID == 0 || p.PID == old || p.Paused {
		t.Fatalf("restart: %+v %v (old pid %d)", p, err, old)
	}
	select {
	case e := <-c.exits:
		t.Fatalf("a verb's exit was reported as unexpected: %+v", e)
	default:
	}

	for _, path := range []string{"/v1/processes/nope/kill", "/v1/processes/" + mgr.ID + "/explode"} {
		if err := cc.call(ctx, "POST", path, &p); err == nil || !strings.Contains(err.Error(), "404") {
			t.Errorf("POST %s: %v, want 404", path, err)
		}
	}
	// Close resumes what it paused and removes the socket.
	if _, err := cc.Do(ctx, mgr.ID, VerbPause); err != nil {
		t.Fatal(err)
	}
	pid := c.PID(mgr.ID)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if !stoppedWithin(t, pid, false) {
		t.Fatalf("Close left %s paused", mgr.ID)
	}
	if _, err := os.Stat(filepath.Join(dir, ControlSocketName)); !os.IsNotExist(err) {
		t.Fatalf("socket after Close: %v", err)
	}
	dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := DialControl(dctx, dir); err == nil {
		t.Fatal("DialControl succeeded with no launcher")
	}
}
