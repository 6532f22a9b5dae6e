package backup

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/internal/proccpu"
)

// The cost of a scheduled backup at scale (issue 15 §4; BENCHMARKS.md
// "Backups"): a bbolt ledger of N events (JobCreated, so N jobs, over
// scaleTenants tenants' chains), then one backup's two steps timed apart:
// save (the record stream into the backup directory, fsynced) and proof
// (restore into a scratch bbolt store, checksums, digest). For each: wall
// and CPU time of the process, bytes allocated, the largest HeapInuse
// sampled every 10 ms (garbage included) and the live heap after it.
// STRATA_BACKUP_EVENTS sets N (1000000 for the figure), STRATA_BACKUP_RUNS
// the backups timed (1); make test runs scaleEvents once.
const (
	scaleEvents      = 20_000
	scaleTenants     = 4
	scaleBatchEvents = 1_000
)

func TestBackup_CostAtScale(t *testing.T) {
	n := scaleEvents
	if v := os.Getenv("STRATA_BACKUP_EVENTS"); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < scaleBatchEvents {
			t.Fatalf("STRATA_BACKUP_EVENTS=%q (at least %d)", v, scaleBatchEvents)
		}
		n = k
	}
	dir := t.TempDir()
	st, err := boltstore.Open(boltstore.Config{Path: filepath.Join(dir, "ledger.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	led, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	tenants := []string{"acme", "globex", "initech", "umbrella"}
	for first, index := 0, uint64(1); first < n; first, index = first+scaleBatchEvents, index+1 {
		k := min(scaleBatchEvents, n-first)
		if _, err := led.Apply(index, fsmtest.JobsCreated(first, k, tenants[int(index)%scaleTenants], "use1")); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ledger: %d events (%d jobs, %d tenants) applied in %s; bbolt file %d bytes", n, n, scaleTenants, time.Since(start).Round(time.Millisecond), fi.Size())

	b, err := New(Config{Dir: filepath.Join(dir, "backups"), Group: "use1", Ledger: led, IsLeader: func() bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	runs := 1
	if v := os.Getenv("STRATA_BACKUP_RUNS"); v != "" {
		if runs, err = strconv.Atoi(v); err != nil || runs < 1 || runs > 10 {
			t.Fatalf("STRATA_BACKUP_RUNS=%q (1 to 10)", v)
		}
	}
	want, _, err := led.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for run := range runs {
		var res Result
		save := measure(func() error { var err error; res, _, err = b.write(); return err })
		if save.err != nil {
			t.Fatal(save.err)
		}
		proof := measure(func() error { return prove(res.Path, res.Digest) })
		if proof.err != nil {
			t.Fatal(proof.err)
		}
		if res.Digest != want {
			t.Fatal("the backup's digest is not the ledger's")
		}
		t.Logf("backup %d: %d bytes (%.1f bytes an event, %.2f of the bbolt file)", run, res.Bytes, float64(res.Bytes)/float64(n), float64(res.Bytes)/float64(fi.Size()))
		for _, s := range []struct {
			name string
			m    measured
		}{{"save", save}, {"proof (restore + digest)", proof}} {
			t.Logf("%s %d: %s wall, %s CPU (%.0f events per CPU-second); %.1f MiB allocated; heap in use +%.1f MiB at peak (garbage included), live heap after +%.1f MiB",
				s.name, run, s.m.wall.Round(time.Millisecond), s.m.cpu.Round(time.Millisecond), float64(n)/s.m.cpu.Seconds(),
				mib(s.m.allocated), mib(s.m.peakInuse), mib(s.m.liveAfter))
		}
		if err := os.Remove(res.Path); err != nil {
			t.Fatal(err)
		}
	}
}

// measured is what measure saw of one step.
type measured struct {
	wall, cpu            time.Duration
	allocated, peakInuse uint64 // bytes: allocated in all; HeapInuse growth at its largest
	liveAfter            uint64 // live heap growth after the step and a GC
	err                  error
}

// measure runs fn, sampling HeapInuse every 10 ms.
func measure(fn func() error) measured {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	baseInuse, baseLive, baseAlloc := ms.HeapInuse, ms.HeapAlloc, ms.TotalAlloc
	peak := baseInuse
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
		}
	}()
	start, cpu0 := time.Now(), proccpu.Used()
	err := fn()
	m := measured{wall: time.Since(start), cpu: proccpu.Used() - cpu0, err: err}
	close(done)
	<-sampled
	runtime.ReadMemStats(&ms)
	m.allocated, m.peakInuse = ms.TotalAlloc-baseAlloc, max(peak, ms.HeapInuse)-baseInuse
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc > baseLive {
		m.liveAfter = ms.HeapAlloc - baseLive
	}
	return m
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
