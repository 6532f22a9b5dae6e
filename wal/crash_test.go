package wal

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashHelperEnv) != "" {
		os.Exit(crashHelperMain())
	}
	os.Exit(m.Run())
}

// Environment of the crash test.
const (
	// killCyclesEnv sets the number of kill cycles (default 200; `make
	// chaos` runs 1,000).
	killCyclesEnv = "STRATA_WAL_KILL_CYCLES"
	// crashSeedEnv replays a kill schedule.
	crashSeedEnv = "STRATA_WAL_CRASH_SEED"

	defaultKillCycles = 200
	// maxKillDelay bounds how long a helper runs before it is killed; the
	// delay is drawn uniformly, so some kills land while it is still
	// recovering.
	maxKillDelay = 25 * time.Millisecond
	// tornTailEvery: when a kill left no torn tail, every this many
	// cycles the test writes one (half a record and stale bytes), so that
	// recovery from a torn tail and the appends after it are always tested.
	tornTailEvery = 3
	// killDuringRecoveryEvery: every this many cycles the kill delay runs
	// from the helper's start rather than from its opening the log.
	killDuringRecoveryEvery = 4
)

// TestCrash_SIGKILLNeverLosesAcknowledgedRecords runs a helper process that
// appends from many goroutines and prints every LSN whose append returned,
// SIGKILLs it at a random moment, and checks the directory it leaves: every
// acknowledged record is present and intact (unless compacted below the
// watermark), the log is a gap-free prefix, and no LSN is acknowledged
// twice. The next helper recovers the directory and appends on; its
// acknowledgements are checked after the next kill, including those made
// right after recovering from a torn tail.
func TestCrash_SIGKILLNeverLosesAcknowledgedRecords(t *testing.T) {
	cycles := envInt(t, killCyclesEnv, defaultKillCycles)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(crashSeedEnv); s != "" {
		seed = uint64(envInt(t, crashSeedEnv, 0))
	}
	t.Logf("seed %d (%s=%d replays the kill schedule), %d kill cycles", seed, crashSeedEnv, seed, cycles)
	rng := rand.New(rand.NewPCG(seed, seed>>1|1))
	helper := crashHelperBinary(t)
	dir := t.TempDir()
	c := &crashChecker{acks: map[LSN]crashAck{}, afterTorn: -1}
	start := time.Now()
	for cycle := range cycles {
		delay := time.Duration(rng.Int64N(int64(maxKillDelay)))
		out := runAndKill(t, helper, dir, cycle, delay)
		c.record(t, cycle, out)
		torn := c.check(t, dir, cycle)
		switch {
		case torn:
			c.stats.tornByKill++
			c.afterTorn = cycle + 1
		case cycle%tornTailEvery == tornTailEvery-1 && injectTornTail(t, dir, rng):
			c.stats.tornInjected++
			c.afterTorn = cycle + 1
		}
	}
	c.checkFinalOpen(t, dir)
	t.Logf("%d cycles in %s: %d acknowledged appends checked, %d of them after a recovery from a torn tail; "+
		"torn tails: %d left by kills, %d injected; %d kills before the helper opened the log",
		cycles, time.Since(start).Round(time.Millisecond), c.stats.acked, c.stats.ackedAfterTorn,
		c.stats.tornByKill, c.stats.tornInjected, c.stats.killedBeforeOpen)
	if c.stats.ackedAfterTorn == 0 {
		t.Fatal("no append made after a recovery from a torn tail was checked")
	}
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return int(v)
}

// crashHelperBinary builds this package's test binary without the race
// detector, so the helper runs at full speed; without a go tool it falls
// back to re-executing the running test binary.
func crashHelperBinary(t *testing.T) string {
	goTool, err := exec.LookPath("go")
	if err == nil {
		out := filepath.Join(t.TempDir(), "wal-crash-helper.test")
		build := exec.Command(goTool, "test", "-c", "-o", out, ".")
		b, err := build.CombinedOutput()
		if err == nil {
			return out
		}
		t.Logf("building the helper failed, re-executing the test binary: %v\n%s", err, b)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}

// runAndKill starts the helper on dir, SIGKILLs it after delay and returns
// what it printed.
func runAndKill(t *testing.T, helper, dir string, run int, delay time.Duration) []byte {
	t.Helper()
	cmd := exec.Command(helper, "-test.run=^$")
	cmd.Env = append(os.Environ(), crashHelperEnv+"=1", crashDirEnv+"="+dir, crashRunEnv+"="+strconv.Itoa(run))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	read := make(chan []byte, 1)
	opened := make(chan struct{}) // closed at the helper's "O" line
	go func() {
		var b []byte
		rd := bufio.NewReader(stdout)
		for {
			line, err := rd.ReadBytes('\n') // a killed helper's last line may be cut
			if len(b) == 0 && bytes.HasPrefix(line, []byte("O ")) && bytes.HasSuffix(line, []byte("\n")) {
				close(opened)
			}
			b = append(b, line...)
			if err != nil {
				break
			}
		}
		read <- b
	}()
	// Most kills land once the helper has opened the log, however slow the
	// machine is to start it; every killDuringRecoveryEvery-th one counts
	// its delay from the start, so that some land while it recovers.
	var out []byte
	if run%killDuringRecoveryEvery != 0 {
		select {
		case <-opened:
		case out = <-read:
			cmd.Wait()
			t.Fatalf("helper exited before it opened the log: %s\nstdout tail: %q", stderr.String(), tail(out))
		}
	}
	kill := time.NewTimer(delay) // the random moment of the crash
	select {
	case <-kill.C:
		if err := cmd.Process.Kill(); err != nil {
			t.Fatalf("kill helper: %v", err)
		}
	case out = <-read:
		// The helper ended on its own: that is a failure it reported.
		cmd.Wait()
		t.Fatalf("helper exited before it was killed: %s\nstdout tail: %q", stderr.String(), tail(out))
	}
	out = <-read
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != -1 {
		t.Fatalf("helper did not die by the kill: %v\n%s", err, stderr.String())
	}
	return out
}

func tail(b []byte) []byte { return b[max(0, len(b)-200):] }

type crashAck struct{ run, writer, seq int }

type crashChecker struct {
	acks      map[LSN]crashAck // acknowledged, not yet compacted away
	afterTorn int              // run whose appends follow a torn-tail recovery
	stats     struct {
		acked, ackedAfterTorn, tornByKill, tornInjected, killedBeforeOpen int
	}
	pendingAfterTorn []LSN // acks of run afterTorn, checked at the next check
}

// record parses the helper's output: "O <last>" once it has opened the log,
// then "A <lsn> <writer> <seq>" per acknowledged append. A line cut by the
// kill is ignored.
func (c *crashChecker) record(t *testing.T, run int, out []byte) {
	t.Helper()
	lines := strings.Split(string(out), "\n")
	lines = lines[:len(lines)-1] // the last element is unterminated or empty
	if len(lines) == 0 {
		c.stats.killedBeforeOpen++
	}
	for _, line := range lines {
		var lsn LSN
		var a crashAck
		if strings.HasPrefix(line, "O ") {
			continue
		}
		if _, err := fmt.Sscanf(line, "A %d %d %d", &lsn, &a.writer, &a.seq); err != nil {
			t.Fatalf("run %d: bad helper line %q: %v", run, line, err)
		}
		a.run = run
		if prev, dup := c.acks[lsn]; dup {
			t.Fatalf("LSN %d acknowledged twice: run %d and run %d", lsn, prev.run, run)
		}
		c.acks[lsn] = a
		c.stats.acked++
		if run == c.afterTorn {
			c.pendingAfterTorn = append(c.pendingAfterTorn, lsn)
		}
	}
}

// check reads dir as a recovering Open would, without changing it, and
// checks every acknowledgement. It reports whether the kill left a torn
// tail in the last segment.
func (c *crashChecker) check(t *testing.T, dir string, run int) (torn bool) {
	t.Helper()
	var prev LSN
	sum, err := inspect(OSFS{}, dir, func(e Entry) error {
		if prev != 0 && e.LSN != prev+1 {
			return fmt.Errorf("gap: LSN %d after %d", e.LSN, prev)
		}
		prev = e.LSN
		if a, ok := c.acks[e.LSN]; ok && !bytes.Equal(e.Payload, crashPayload(a.run, a.writer, a.seq)) {
			return fmt.Errorf("LSN %d holds %q, acknowledged as run %d writer %d seq %d", e.LSN, tail(e.Payload), a.run, a.writer, a.seq)
		}
		return nil
	})
	var ce *CorruptError
	switch {
	case err == nil:
	case errors.As(err, &ce) && ce.Segment == lastSegmentName(t, dir):
		torn = true
	default:
		t.Fatalf("after run %d: %v", run, err)
	}
	for lsn := range c.acks {
		switch {
		case sum.Records > 0 && lsn < sum.FirstLSN || sum.Records == 0 && lsn <= sum.LastLSN:
			if lsn > sum.Watermarks.Compacted {
				t.Fatalf("after run %d: acknowledged LSN %d gone, but COMPACTED is only %d", run, lsn, sum.Watermarks.Compacted)
			}
			delete(c.acks, lsn)
		case lsn > sum.LastLSN:
			t.Fatalf("after run %d: acknowledged LSN %d lost; the log ends at %d (seed in the log above)", run, lsn, sum.LastLSN)
		}
	}
	c.stats.ackedAfterTorn += len(c.pendingAfterTorn)
	c.pendingAfterTorn = c.pendingAfterTorn[:0]
	return torn
}

func lastSegmentName(t *testing.T, dir string) string {
	segs := segmentFiles(t, dir)
	if len(segs) == 0 {
		return ""
	}
	return segs[len(segs)-1].name
}

// injectTornTail writes what a crash in the middle of a batch can leave:
// the first half of the next record right after the end of the log, and
// stale bytes further on. It reports whether there was room.
func injectTornTail(t *testing.T, dir string, rng *rand.Rand) bool {
	t.Helper()
	segs := segmentFiles(t, dir)
	if len(segs) == 0 {
		return false
	}
	seg := segs[len(segs)-1]
	s, err := scanFile(OSFS{}, dir, seg, nil)
	if err != nil || s.problem != nil {
		t.Fatalf("scan %s before injecting: %v %v", seg.name, err, s.problem)
	}
	rec, err := EncodeRecord(s.last+1, Record{Type: 9, Payload: bytes.Repeat([]byte("torn"), 50)})
	if err != nil {
		t.Fatal(err)
	}
	junkAt := s.end + int64(len(rec)) + rng.Int64N(4096)
	if junkAt+64 > crashSegmentBytes {
		return false
	}
	path := filepath.Join(dir, seg.name)
	patch(t, path, s.end, rec[:len(rec)/2])
	patch(t, path, junkAt, bytes.Repeat([]byte{0xa5}, 64))
	return true
}

// checkFinalOpen recovers the directory with Open and checks it once more.
func (c *crashChecker) checkFinalOpen(t *testing.T, dir string) {
	t.Helper()
	w := mustOpen(t, Config{Dir: dir, SegmentBytes: crashSegmentBytes})
	it, err := w.Iterator(0)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for it.Next() {
		e := it.Entry()
		if a, ok := c.acks[e.LSN]; ok {
			if !bytes.Equal(e.Payload, crashPayload(a.run, a.writer, a.seq)) {
				t.Fatalf("after Open LSN %d is not what was acknowledged", e.LSN)
			}
			n++
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(c.acks) {
		t.Fatalf("after Open %d of %d acknowledged records found", n, len(c.acks))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(dir); err != nil {
		t.Fatalf("Verify after the final Open: %v", err)
	}
}
