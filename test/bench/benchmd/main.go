// Command benchmd renders the JSON results of `strata bench -o json` runs
// as the generated part of BENCHMARKS.md's "## bench-compare" section.
// `make bench-compare` (test/bench/compare.sh) runs it:
//
//	go run ./test/bench/benchmd -in DIR -out BENCHMARKS.md -etcd-version 3.4.23
//
// Every *.json file of DIR is one result. Only the text between the
// section's markers is replaced.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/strata-ledger/strata/test/bench"
)

func main() {
	in := flag.String("in", "", "directory of `strata bench -o json` outputs (*.json)")
	out := flag.String("out", "BENCHMARKS.md", "file to update")
	etcdVersion := flag.String("etcd-version", "", "etcd version measured")
	strata := flag.String("strata", "", "how the Strata cluster ran, for the header")
	flag.Parse()
	if err := run(*in, *out, bench.CompareEnv{
		When: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Machine: machine(),
		EtcdVersion: *etcdVersion, Strata: *strata, Load: cpuPressure(),
	}); err != nil {
		fmt.Fprintln(os.Stderr, "benchmd:", err)
		os.Exit(1)
	}
}

func run(in, out string, env bench.CompareEnv) error {
	if in == "" {
		return fmt.Errorf("-in: no result directory given")
	}
	files, err := filepath.Glob(filepath.Join(in, "*.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no *.json results in %s", in)
	}
	var results []*bench.Result
	for _, f := range files {
		r, err := readResult(f)
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	doc, err := os.ReadFile(out)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(out, bench.SpliceCompare(doc, bench.RenderCompare(results, env)), 0o644)
}

func readResult(path string) (*bench.Result, error) {
	var r bench.Result
	if err := bench.ReadResultFile(path, "bench result", &r); err != nil {
		return nil, err
	}
	if r.Target == "" || r.Clients == 0 {
		return nil, fmt.Errorf("%s: not a bench result: no target or clients", path)
	}
	return &r, nil
}

// machine names the CPU, cores, kernel and Go version.
func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := runtime.GOOS
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = "Linux " + strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%s, %d cores, %s, %s", cpu, runtime.NumCPU(), kernel, runtime.Version())
}

// cpuPressure reports the share of the last 5 minutes (about the length of
// a full comparison) in which some runnable task waited for a CPU, from
// Linux PSI; "" where unavailable.
func cpuPressure() string {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return ""
	}
	for _, f := range strings.Fields(strings.SplitN(string(b), "\n", 2)[0]) {
		if v, ok := strings.CutPrefix(f, "avg300="); ok {
			return "CPU pressure " + v + " % (PSI some, avg300, measured at the end)"
		}
	}
	return ""
}
