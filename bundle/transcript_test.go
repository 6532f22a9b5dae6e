package bundle

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/hlc"
)

// TestMerge_Transcripts runs testdata/merge.txt.
func TestMerge_Transcripts(t *testing.T) {
	doc, err := os.ReadFile("testdata/merge.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range strings.Split(string(doc), "\n\n") {
		var name string
		bundles := map[string][]byte{}
		var inputs []string
		var want []string
		expect := false
		for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
			switch {
			case expect:
				want = append(want, line)
			case strings.HasPrefix(line, "#"):
				name = strings.TrimSpace(strings.TrimPrefix(line, "#"))
			case strings.HasPrefix(line, "bundle "):
				n, evs, _ := strings.Cut(strings.TrimPrefix(line, "bundle "), ": ")
				bundles[n] = rechained(t, parseEvents(t, evs), testCreated, n)
			case strings.HasPrefix(line, "merge "):
				inputs = strings.Fields(strings.TrimPrefix(line, "merge "))
			case line == "----":
				expect = true
			}
		}
		if inputs == nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			got, out := runMerge(t, bundles, inputs)
			slices.Reverse(inputs)
			again, out2 := runMerge(t, bundles, inputs)
			if got != strings.Join(want, "\n") && !(strings.HasPrefix(want[0], "error: ") && strings.HasPrefix(got, want[0])) {
				t.Fatalf("got\n%s\nwant\n%s", got, strings.Join(want, "\n"))
			}
			if !bytes.Equal(out, out2) || (strings.HasPrefix(got, "error") != strings.HasPrefix(again, "error")) {
				t.Fatalf("reversed inputs: %s", again)
			}
			ext, out3 := runMergeWith(t, bundles, inputs, MergeConfig{RunEntries: 1, NewRunFile: tempRuns(t.TempDir())})
			if !bytes.Equal(out, out3) || strings.HasPrefix(got, "error") != strings.HasPrefix(ext, "error") {
				t.Fatalf("external merge (runs of 1 entry): %s", ext)
			}
		})
	}
}

func runMerge(t *testing.T, bundles map[string][]byte, inputs []string) (string, []byte) {
	return runMergeWith(t, bundles, inputs, MergeConfig{})
}

func runMergeWith(t *testing.T, bundles map[string][]byte, inputs []string, cfg MergeConfig) (string, []byte) {
	srcs := make([]Source, len(inputs))
	for i, n := range inputs {
		srcs[i] = Source{Name: n, R: bytes.NewReader(bundles[n]), Size: int64(len(bundles[n]))}
	}
	var out bytes.Buffer
	res, err := Merge(&out, srcs, cfg)
	if err != nil {
		if !errors.Is(err, ErrBodyConflict) {
			t.Fatalf("merge: %v", err)
		}
		return "error: " + err.Error(), nil
	}
	var evs []string
	for _, se := range entriesOf(t, out.Bytes()) {
		evs = append(evs, fmt.Sprintf("e%d@%s", se.ID[15], se.HLC))
	}
	return strings.Join(evs, " ") + fmt.Sprintf("\nduplicates %d", res.Duplicates), out.Bytes()
}

// parseEvents reads "eN@W:L:N" (and "eN!@..." for another body).
func parseEvents(t *testing.T, s string) []*fsm.StoredEvent {
	t.Helper()
	var out []*fsm.StoredEvent
	for _, f := range strings.Fields(s) {
		var n uint64
		var ts string
		other := strings.Contains(f, "!")
		if _, err := fmt.Sscanf(strings.Replace(f, "!", "", 1), "e%d@%s", &n, &ts); err != nil {
			t.Fatalf("event %q: %v", f, err)
		}
		at, err := hlc.Parse(ts)
		if err != nil {
			t.Fatalf("event %q: %v", f, err)
		}
		completed := n
		if other {
			completed += 1000
		}
		e := fsmtest.NewEvent(fsmtest.ID(n), "use1-1700000000000-gate1-00001", "acme", "use1", fsmtest.NodeName(at.Node), at, 1,
			&fsm.JobProgressReported{Region: "use1", Completed: completed})
		out = append(out, &fsm.StoredEvent{Event: e})
	}
	return out
}
