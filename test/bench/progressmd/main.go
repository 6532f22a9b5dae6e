// Command progressmd renders the JSON results of `strata bench progress -o
// json` runs as the generated part of BENCHMARKS.md's "## bench-progress"
// section. `make bench-progress` (test/bench/progress.sh) runs it:
//
//	go run ./test/bench/progressmd -in DIR -out BENCHMARKS.md -machine "..." -load "..."
//
// Every DIR/ROW-i.json is run i of a row (udp, http, udp-half, udp-loss).
// Only the text between the section's markers is replaced.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/strata-ledger/strata/test/bench"
)

func main() {
	in := flag.String("in", "", "directory of `strata bench progress -o json` outputs (ROW-i.json)")
	out := flag.String("out", "BENCHMARKS.md", "file to update")
	machine := flag.String("machine", "", "CPU, cores, kernel, Go version")
	load := flag.String("load", "", "how busy the machine was")
	setup := flag.String("setup", "", "how the cluster and the load ran")
	flag.Parse()
	env := bench.DataPlaneEnv{When: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Machine: *machine, Load: *load, Setup: *setup}
	if err := run(*in, *out, env); err != nil {
		fmt.Fprintln(os.Stderr, "progressmd:", err)
		os.Exit(1)
	}
}

func run(in, out string, env bench.DataPlaneEnv) error {
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
	rows := map[string][]*bench.DataPlaneResult{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		i := strings.LastIndexByte(name, '-')
		if i <= 0 {
			return fmt.Errorf("%s: want ROW-i.json", f)
		}
		r, err := readResult(f)
		if err != nil {
			return err
		}
		rows[name[:i]] = append(rows[name[:i]], r)
	}
	doc, err := os.ReadFile(out)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(out, bench.SpliceDataPlane(doc, bench.RenderDataPlane(rows, env)), 0o644)
}

func readResult(path string) (*bench.DataPlaneResult, error) {
	var r bench.DataPlaneResult
	if err := bench.ReadResultFile(path, "bench progress result", &r); err != nil {
		return nil, err
	}
	return &r, nil
}
