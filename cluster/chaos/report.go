package chaos

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// maxAnomaliesPrinted bounds the anomalies the text report lists; the
// JSON report has them all.
const maxAnomaliesPrinted = 50

// WriteText writes the report a person reads: seed, faults by kind,
// operations by kind and outcome, jobs, the checks, anomalies.
func (r *Result) WriteText(w io.Writer) {
	v := r.Verdict
	fmt.Fprintf(w, "\nstrata chaos report\n")
	fmt.Fprintf(w, "  seed         %d   (replay the faults: --seed %d)\n", r.Seed, r.Seed)
	fmt.Fprintf(w, "  duration     %v of faults and load, %v in all\n", r.Duration, r.Elapsed.Round(time.Second))
	injected, failed := map[Kind]int{}, map[Kind]int{}
	for _, f := range r.Faults {
		if f.Err != "" {
			failed[f.Kind]++
		} else {
			injected[f.Kind]++
		}
	}
	var parts []string
	for _, k := range r.Kinds {
		s := fmt.Sprintf("%s %d", k, injected[k])
		if failed[k] > 0 {
			s += fmt.Sprintf(" (+%d with errors)", failed[k])
		}
		parts = append(parts, s)
	}
	fmt.Fprintf(w, "  faults       %d: %s (%d scheduled; slow heals push the rest later)\n", len(r.Faults), strings.Join(parts, ", "), r.Scheduled)
	if restarts := restartTimes(r.Faults); len(restarts) > 0 {
		fmt.Fprintf(w, "  restarts     a killed node was ready %s after its restart began (median of %d; max %s)\n",
			restarts[len(restarts)/2].Round(100*time.Millisecond), len(restarts), restarts[len(restarts)-1].Round(100*time.Millisecond))
	}
	for _, f := range r.Faults {
		if f.Err != "" {
			fmt.Fprintf(w, "    error: %v: %s\n", f.Fault, f.Err)
		}
	}
	if slices.Contains(r.Kinds, Skew) {
		fmt.Fprintf(w, "  hlc skew     %d remote timestamps rejected as too far ahead (at least; counters of restarted nodes restart)\n", r.SkewRejections)
	}
	if r.HealErr != "" {
		fmt.Fprintf(w, "  heal error   %s\n", r.HealErr)
	}
	fmt.Fprintf(w, "  operations  ")
	for _, k := range []OpKind{OpSubmit, OpCancel, OpRead} {
		m := v.Ops[k]
		fmt.Fprintf(w, " %s %d (ok %d, failed %d, unknown %d);", k, m[OK]+m[Failed]+m[Unknown], m[OK], m[Failed], m[Unknown])
	}
	fmt.Fprintln(w)
	if v.Dropped > 0 {
		fmt.Fprintf(w, "  dropped      %d operations past the history bound\n", v.Dropped)
	}
	fmt.Fprintf(w, "  jobs         %d submitted, %d acknowledged, %d terminal, %d lost, %d not terminal\n",
		v.Jobs, v.Acked, v.JobsTerminal, v.Lost, v.NotTerminal)
	fmt.Fprintf(w, "  ambiguous    %d submits without an answer: %d had taken effect, %d had not, %d unresolved\n",
		v.AmbiguousTookEffect+v.AmbiguousDidNot+v.AmbiguousUnresolved, v.AmbiguousTookEffect, v.AmbiguousDidNot, v.AmbiguousUnresolved)
	fmt.Fprintf(w, "  end states   %s\n", formatCounts(v.EndStates))
	l := v.Linearizability
	fmt.Fprintf(w, "  linearizable %d jobs checked, %d not linearizable, %d undecided (check timed out)\n", l.Jobs, len(l.Illegal), len(l.Unknown))
	if len(v.Anomalies) == 0 {
		fmt.Fprintf(w, "  anomalies    none\n")
		return
	}
	fmt.Fprintf(w, "  anomalies    %d\n", len(v.Anomalies))
	for i, a := range v.Anomalies {
		if i == maxAnomaliesPrinted {
			fmt.Fprintf(w, "    ... %d more (--json lists them all)\n", len(v.Anomalies)-i)
			break
		}
		fmt.Fprintf(w, "    %s\n", a)
	}
}

// restartTimes are the kills' heal times (restart until ready), sorted.
func restartTimes(fs []FaultRecord) []time.Duration {
	var out []time.Duration
	for _, f := range fs {
		if f.Kind == Kill && f.Err == "" {
			out = append(out, f.Healed-(f.Injected+f.Hold))
		}
	}
	slices.Sort(out)
	return out
}

func formatCounts(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
