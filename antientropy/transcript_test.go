package antientropy

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/descent.txt with the transcripts the code produces")

// TestCompare_Transcripts replays the cases of testdata/descent.txt, a
// transcript per case of what each round asks and what the answer shows,
// in the manner of CockroachDB's datadriven tests. A case is its input
// (the depth, the jobs both sides start with, then each side's changes),
// "----", and the transcript; go test -run Transcripts -update rewrites
// the transcripts.
//
// Input lines: "depth D", "jobs N" (jobs 0..N-1 at version 0 on both
// sides), "local|peer set I V" (job I at version V), "local|peer delete
// I".
func TestCompare_Transcripts(t *testing.T) {
	const path = "testdata/descent.txt"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, c := range strings.Split(string(data), "\n== ")[1:] {
		input, want, _ := strings.Cut(c, "----\n")
		got := transcript(t, input)
		if !*update && got != want {
			t.Errorf("case %s\ngot:\n%swant:\n%s", strings.SplitN(input, "\n", 2)[0], got, want)
		}
		out.WriteString("\n== " + input + "----\n" + got)
	}
	if *update {
		head, _, _ := strings.Cut(string(data), "\n== ")
		if err := os.WriteFile(path, []byte(head+out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func transcript(t *testing.T, input string) string {
	depth, local, peer := 0, ledger{}, ledger{}
	for _, line := range strings.Split(input, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		num := func(i int) int {
			n, err := strconv.Atoi(f[i])
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return n
		}
		switch {
		case f[0] == "depth":
			depth = num(1)
		case f[0] == "jobs":
			local, peer = newLedger(num(1)), newLedger(num(1))
		case len(f) >= 3 && (f[0] == "local" || f[0] == "peer"):
			side := map[bool]ledger{true: local, false: peer}[f[0] == "local"]
			id := jobID(num(2))
			if f[1] == "delete" {
				delete(side, id)
			} else {
				side[id] = digestOf(id, num(3))
			}
		default:
			t.Fatalf("unknown input %q", line)
		}
	}
	lt, pt := treeOf(t, depth, local), treeOf(t, depth, peer)
	var w strings.Builder
	state := func(n uint32) string {
		l, _ := lt.Hash(n)
		p, _ := pt.Hash(n)
		switch {
		case l == p:
			return "equal"
		case p == Hash{}:
			return "differs, peer empty"
		}
		return "differs"
	}
	c := NewCompare(lt)
	req := c.Start()
	for round := 1; ; round++ {
		fmt.Fprintf(&w, "round %d: ask", round)
		if len(req.Nodes) > 0 {
			fmt.Fprintf(&w, " nodes %v", req.Nodes)
		}
		for _, l := range req.Leaves {
			fmt.Fprintf(&w, " leaf %d", l.Bucket)
			if l.After != "" {
				fmt.Fprintf(&w, " after %s", l.After)
			}
		}
		w.WriteString("\n")
		p, err := Answer(pt, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range req.Nodes {
			if n == 1 {
				fmt.Fprintf(&w, "  root %s\n", state(1))
				continue
			}
			fmt.Fprintf(&w, "  node %d %s; node %d (derived) %s\n", n, state(n), n+1, state(n+1))
		}
		for _, l := range p.Leaves {
			fmt.Fprintf(&w, "  leaf %d: %d peer items, %d local", l.Bucket, len(l.Items), len(lt.Items(l.Bucket)))
			if l.More {
				w.WriteString(", more")
			}
			w.WriteString("\n")
		}
		next, done, err := c.Step(p)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			break
		}
		req = next
	}
	fmt.Fprintf(&w, "differences:\n")
	for _, id := range c.Differences() {
		fmt.Fprintf(&w, "  %s\n", id)
	}
	return w.String()
}
