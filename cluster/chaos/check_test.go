package chaos

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

const ms = time.Millisecond

func submit(key, id string, call, ret time.Duration, out Outcome) Op {
	op := Op{Kind: OpSubmit, Key: key, JobID: id, Call: call * ms, Return: ret * ms, Outcome: out}
	if out != OK {
		op.JobID = ""
	}
	return op
}

func read(key, id string, call, ret time.Duration, st fsm.JobStatus) Op {
	return Op{Client: 1, Kind: OpRead, Key: key, JobID: id, Call: call * ms, Return: ret * ms, Outcome: OK, Found: st != 0, Status: st}
}

func final(op Op) Op { op.Final = true; return op }

func cancel(key, id string, call, ret time.Duration, out Outcome, ledger string) Op {
	return Op{Client: 2, Kind: OpCancel, Key: key, JobID: id, Call: call * ms, Return: ret * ms, Outcome: out, Cancel: ledger}
}

func refused(key, id string, call, ret time.Duration, st fsm.JobStatus) Op {
	op := cancel(key, id, call, ret, OK, CancelRefused)
	op.Found, op.Status = true, st
	return op
}

func kinds(as []Anomaly) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Kind)
	}
	slices.Sort(out)
	return out
}

func TestCheck_FindsAnomalies(t *testing.T) {
	const k, id = "k1", "use1-1-gate1-00001"
	tests := []struct {
		name string
		ops  []Op
		want []string // anomaly kinds, sorted
	}{
		{
			name: "clean run",
			ops: []Op{submit(k, id, 0, 10, OK), read(k, id, 20, 30, fsm.JobStatusRunning),
				cancel(k, id, 40, 50, OK, "applied"), read(k, id, 60, 70, fsm.JobStatusCancelling),
				final(read(k, id, 80, 90, fsm.JobStatusCancelled))},
		},
		{
			name: "acknowledged job lost",
			ops: []Op{submit(k, id, 0, 10, OK), read(k, id, 20, 30, fsm.JobStatusRunning),
				final(read(k, id, 80, 90, 0))},
			want: []string{AnomalyLost, AnomalyNotLinearizable},
		},
		{
			name: "stale strong read after the acknowledgement",
			ops: []Op{submit(k, id, 0, 10, OK), read(k, id, 20, 30, 0),
				final(read(k, id, 80, 90, fsm.JobStatusCompleted))},
			want: []string{AnomalyNotLinearizable},
		},
		{
			name: "read concurrent with the submit may miss it",
			ops: []Op{read(k, id, 5, 30, 0), submit(k, id, 0, 10, OK),
				final(read(k, id, 80, 90, fsm.JobStatusCompleted))},
		},
		{
			name: "status goes back",
			ops: []Op{submit(k, id, 0, 10, OK), read(k, id, 20, 30, fsm.JobStatusCompleted),
				final(read(k, id, 80, 90, fsm.JobStatusRunning))},
			want: []string{AnomalyNotLinearizable, AnomalyNotTerminal},
		},
		{
			name: "terminal status changes",
			ops: []Op{submit(k, id, 0, 10, OK), read(k, id, 20, 30, fsm.JobStatusCompleted),
				final(read(k, id, 80, 90, fsm.JobStatusFailed))},
			want: []string{AnomalyNotLinearizable},
		},
		{
			name: "acknowledged cancel not seen",
			ops: []Op{submit(k, id, 0, 10, OK), cancel(k, id, 20, 30, OK, "applied"),
				read(k, id, 40, 50, fsm.JobStatusRunning), final(read(k, id, 80, 90, fsm.JobStatusCancelled))},
			want: []string{AnomalyNotLinearizable},
		},
		{
			name: "cancel applied to a job seen terminal",
			ops: []Op{submit(k, id, 0, 10, OK), read(k, id, 20, 30, fsm.JobStatusCompleted),
				cancel(k, id, 40, 50, OK, "applied"), final(read(k, id, 80, 90, fsm.JobStatusCompleted))},
			want: []string{AnomalyNotLinearizable},
		},
		{
			name: "unknown cancel may take effect late",
			ops: []Op{submit(k, id, 0, 10, OK), cancel(k, id, 20, 25, Unknown, ""),
				read(k, id, 40, 50, fsm.JobStatusRunning), final(read(k, id, 80, 90, fsm.JobStatusCancelled))},
		},
		{
			name: "unknown submit seen by a later read, then resolved",
			ops: []Op{submit(k, "", 0, 10, Unknown), final(read(k, id, 20, 30, fsm.JobStatusCompleted)),
				{Kind: OpSubmit, Key: k, JobID: id, Call: 15 * ms, Return: 18 * ms, Outcome: OK, Existing: true}},
		},
		{
			name: "phantom job seen",
			ops:  []Op{read("phantom-1", "use1-1-gate1-99999", 0, 10, fsm.JobStatusRunning)},
			want: []string{AnomalyNotLinearizable},
		},
		{
			name: "phantom job not seen",
			ops:  []Op{read("phantom-1", "use1-1-gate1-99999", 0, 10, 0)},
		},
		{
			name: "two job ids for one key",
			ops: []Op{submit(k, id, 0, 10, OK), submit(k, "use1-1-gate1-00002", 20, 30, OK),
				final(read(k, id, 80, 90, fsm.JobStatusCompleted))},
			want: []string{AnomalyTwoJobsOneKey},
		},
		{
			name: "never terminal",
			ops:  []Op{submit(k, id, 0, 10, OK), final(read(k, id, 80, 90, fsm.JobStatusRunning))},
			want: []string{AnomalyNotTerminal},
		},
		{
			name: "never read at the end",
			ops:  []Op{submit(k, id, 0, 10, OK)},
			want: []string{AnomalyNotTerminal},
		},
		{
			name: "a cancel refused as terminal is an observation",
			ops: []Op{submit(k, id, 0, 10, OK), refused(k, id, 20, 30, fsm.JobStatusCompleted),
				final(read(k, id, 80, 90, fsm.JobStatusCompleted))},
		},
		{
			name: "a job seen terminal by a refused cancel runs again",
			ops: []Op{submit(k, id, 0, 10, OK), refused(k, id, 20, 30, fsm.JobStatusCompleted),
				read(k, id, 40, 50, fsm.JobStatusRunning), final(read(k, id, 80, 90, fsm.JobStatusCompleted))},
			want: []string{AnomalyNotLinearizable},
		},
		{
			name: "a cancel answered 404 for an acknowledged job",
			ops: []Op{submit(k, id, 0, 10, OK), cancel(k, id, 20, 30, OK, CancelNotFound),
				final(read(k, id, 80, 90, fsm.JobStatusCompleted))},
			want: []string{AnomalyNotLinearizable},
		},
		{
			name: "a GLOBAL submit answered at LOCAL is no acknowledgement",
			ops: []Op{{Kind: OpSubmit, Key: k, JobID: id, Return: 10 * ms, Outcome: Unknown, Durability: "LOCAL", Existing: true},
				read(k, id, 20, 30, 0)},
			want: []string{AnomalyWeakAck},
		},
		{
			name: "failed operations change nothing",
			ops: []Op{submit(k, id, 0, 10, OK), cancel(k, id, 20, 30, Failed, ""),
				read(k, id, 40, 50, fsm.JobStatusRunning), final(read(k, id, 80, 90, fsm.JobStatusCompleted))},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Check(tt.ops, 0, CheckConfig{})
			if got := kinds(v.Anomalies); !slices.Equal(got, tt.want) {
				t.Fatalf("anomalies %v, want %v:\n%v", got, tt.want, v.Anomalies)
			}
		})
	}
}

func TestCheck_CountsJobsAndOutcomes(t *testing.T) {
	ops := []Op{
		submit("a", "j-a", 0, 10, OK), final(read("a", "j-a", 80, 90, fsm.JobStatusCompleted)),
		submit("b", "", 0, 10, Unknown),
		{Kind: OpSubmit, Key: "b", JobID: "j-b", Call: 20 * ms, Return: 30 * ms, Outcome: OK, Existing: true},
		final(read("b", "j-b", 80, 90, fsm.JobStatusCancelled)),
		submit("c", "", 0, 10, Unknown),
		{Kind: OpSubmit, Key: "c", JobID: "j-c", Call: 20 * ms, Return: 30 * ms, Outcome: OK},
		final(read("c", "j-c", 80, 90, fsm.JobStatusCompleted)),
		submit("d", "", 0, 10, Unknown),
		submit("e", "", 0, 10, Failed),
	}
	v := Check(ops, 3, CheckConfig{})
	if len(v.Anomalies) != 0 {
		t.Fatalf("anomalies %v", v.Anomalies)
	}
	if v.Jobs != 5 || v.Acked != 3 || v.AmbiguousTookEffect != 1 || v.AmbiguousDidNot != 1 || v.AmbiguousUnresolved != 1 {
		t.Fatalf("verdict %+v", v)
	}
	if v.EndStates["COMPLETED"] != 2 || v.EndStates["CANCELLED"] != 1 || v.JobsTerminal != 3 || v.Dropped != 3 {
		t.Fatalf("end states %v dropped %d", v.EndStates, v.Dropped)
	}
	if v.Ops[OpSubmit][Unknown] != 3 || v.Ops[OpSubmit][OK] != 3 || v.Ops[OpSubmit][Failed] != 1 || v.Ops[OpRead][OK] != 3 {
		t.Fatalf("ops %v", v.Ops)
	}
	if v.Linearizability.Jobs != 5 || len(v.Linearizability.Illegal) != 0 {
		t.Fatalf("linearizability %+v", v.Linearizability)
	}
}

func TestParseCounter(t *testing.T) {
	page := "# HELP strata_hlc_clock_skew_rejections_total x\n# TYPE strata_hlc_clock_skew_rejections_total counter\n" +
		"strata_hlc_clock_skew_rejections_total_other 9\nstrata_hlc_clock_skew_rejections_total 14\n"
	v, err := parseCounter(strings.NewReader(page), skewRejectionsMetric)
	if err != nil || v != 14 {
		t.Fatalf("parseCounter = %v, %v; want 14", v, err)
	}
	if _, err := parseCounter(strings.NewReader("other 1\n"), skewRejectionsMetric); err == nil {
		t.Fatal("a missing metric parsed")
	}
}

// parseCounter reads /metrics pages of nodes: it must never panic and
// must find a counter wherever it stands in the page.
func FuzzParseCounter(f *testing.F) {
	f.Add("strata_hlc_clock_skew_rejections_total 3\n", 3.0)
	f.Add("# x\nstrata_hlc_clock_skew_rejections_total_x 1\n", 0.0)
	f.Fuzz(func(t *testing.T, page string, want float64) {
		_, _ = parseCounter(strings.NewReader(page), skewRejectionsMetric)
		if strings.ContainsAny(page, "\r\n") || strings.HasPrefix(page, skewRejectionsMetric) {
			return
		}
		v, err := parseCounter(strings.NewReader(page+"\n"+skewRejectionsMetric+" "+strconv.FormatFloat(want, 'g', -1, 64)+"\n"), skewRejectionsMetric)
		if err != nil || v != want && !math.IsNaN(want) {
			t.Fatalf("after %q: %v, %v; want %v", page, v, err, want)
		}
	})
}
