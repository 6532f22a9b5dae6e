package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// Exit codes of `strata job watch` for a job that ended other than
// COMPLETED (0); 1 and 2 keep their meaning (error, usage).
const (
	exitJobFailed    = 3
	exitJobCancelled = 4
	exitJobTimedOut  = 5
)

// watchBarWidth is the width of a region's bar, in cells.
const watchBarWidth = 30

func newJobWatchCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "watch JOB_ID",
		Short: "Follow a job until it ends: one progress bar per region; the exit code is its outcome",
		Long: `Follow a job until it ends (GET /v1/jobs/{id}/watch). Each region gets a bar:
completed+failed simulated requests out of what its workflows should send
(count x rate x duration, summed); a job without that estimate shows status
only. With -o json every state is printed as one JSON line instead. A broken
stream is reopened (on the next --addr when a node is gone).

While workers report over the data plane, each region also shows its live
request rate and p50/p99 latency of the last seconds (-o json: {"live": ...}
lines); these figures are held in the gates' memory only, not in the ledger.

Exit codes: 0 COMPLETED, 3 FAILED, 4 CANCELLED, 5 TIMED_OUT, 1 error, 2 usage.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			var show func(*fsm.JobState) error
			var showLive func(api.JobLive) error
			if f.json() {
				show = func(st *fsm.JobState) error { return printJSONLine(out, st) }
				showLive = func(l api.JobLive) error { return printJSONLine(out, map[string]api.JobLive{"live": l}) }
			} else {
				v := newWatchView(out, isTerminalWriter(out))
				show, showLive = v.show, v.showLive
			}
			var last *fsm.JobState
			err = c.WatchJobLive(cmd.Context(), args[0], f.session, func(st *fsm.JobState) error {
				last = st
				return show(st)
			}, showLive)
			if err != nil {
				return err
			}
			return jobOutcome(last)
		},
	}
}

// jobEndedError is a watched job that ended other than COMPLETED; run
// exits with its ExitCode.
type jobEndedError struct {
	id     string
	status fsm.JobStatus
}

func (e jobEndedError) Error() string { return fmt.Sprintf("job %s ended %s", e.id, e.status) }

// ExitCode is the job's exit code (jobExitCode).
func (e jobEndedError) ExitCode() int { return jobExitCode(e.status) }

// jobExitCode maps a terminal status to the exit code of `job watch`.
func jobExitCode(s fsm.JobStatus) int {
	switch s {
	case fsm.JobStatusCompleted:
		return exitOK
	case fsm.JobStatusFailed:
		return exitJobFailed
	case fsm.JobStatusCancelled:
		return exitJobCancelled
	case fsm.JobStatusTimedOut:
		return exitJobTimedOut
	}
	return exitError
}

// jobOutcome is nil for a COMPLETED job, else the error carrying its exit
// code.
func jobOutcome(st *fsm.JobState) error {
	if st == nil {
		return fmt.Errorf("watch ended without a state")
	}
	if jobExitCode(st.Status) == exitOK {
		return nil
	}
	return jobEndedError{id: st.JobID, status: st.Status}
}

// regionTotal is the simulated requests one region of spec should run:
// every workflow runs count instances in every region, each at rate
// requests per second for duration. 0 when the spec gives no estimate.
func regionTotal(spec *fsm.JobSpec) int64 {
	var total float64
	for _, w := range spec.Workflows {
		total += float64(w.Count) * w.Rate * time.Duration(w.Duration).Seconds()
	}
	if total < 1 || math.IsNaN(total) {
		return 0
	}
	return int64(min(math.Round(total), math.MaxInt64/2))
}

// regionLine is what one region's line shows.
type regionLine struct {
	region  string
	status  string
	done    int64 // completed + failed
	failed  uint64
	total   int64 // 0: no bar
	workers uint32
}

// regionLines computes every region's line of st.
func regionLines(st *fsm.JobState) []regionLine {
	total := regionTotal(&st.Spec)
	out := make([]regionLine, len(st.Regions))
	for i := range st.Regions {
		r := &st.Regions[i]
		done := r.Completed + r.Failed
		out[i] = regionLine{region: r.Region, status: r.Status(), done: int64(min(done, math.MaxInt64/2)),
			failed: r.Failed, total: total, workers: r.WorkerCount}
	}
	return out
}

// statusLine is the first line of the view.
func statusLine(st *fsm.JobState) string {
	s := fmt.Sprintf("job %s  %s  events %d  hlc %s", st.JobID, st.Status, st.Events, st.HLC)
	if st.Decision.Type != 0 {
		s += "  decision " + st.Decision.Type.String()
	}
	return s
}

// watchView draws the states of a watched job: on a terminal, redrawn in
// place (one bar per region under a status line); elsewhere one block of
// lines per state.
type watchView struct {
	w     io.Writer
	tty   bool
	bars  map[string]*progressbar.ProgressBar
	drawn int // lines drawn last time (tty)
	last  *fsm.JobState
	live  api.JobLive
}

// showLive records a job's live statistics: on a terminal they join the
// region lines at the next redraw (now, if a state was drawn); elsewhere
// each region's figures are one line.
func (v *watchView) showLive(live api.JobLive) error {
	v.live = live
	if v.tty {
		if v.last == nil {
			return nil
		}
		return v.show(v.last)
	}
	regions := slices.Sorted(maps.Keys(live))
	var b strings.Builder
	for _, r := range regions {
		fmt.Fprintf(&b, "%s  %s\n", r, liveText(live[r]))
	}
	_, err := io.WriteString(v.w, b.String())
	return err
}

// liveText renders one region's live figures.
func liveText(l api.LiveStats) string {
	s := fmt.Sprintf("live %.1f req/s", l.RequestsPerS)
	if l.P50Ms > 0 || l.P99Ms > 0 {
		s += fmt.Sprintf("  p50 %.1f ms  p99 %.1f ms", l.P50Ms, l.P99Ms)
	}
	return s + "  (not durable)"
}

func newWatchView(w io.Writer, tty bool) *watchView {
	return &watchView{w: w, tty: tty, bars: map[string]*progressbar.ProgressBar{}}
}

func (v *watchView) show(st *fsm.JobState) error {
	v.last = st
	lines := []string{statusLine(st)}
	regions := regionLines(st)
	width := 0
	for _, r := range regions {
		width = max(width, len(r.region))
	}
	for _, r := range regions {
		line := v.regionText(r, width)
		if l, ok := v.live[r.region]; ok && v.tty && !st.Status.Terminal() {
			line += "  " + liveText(l)
		}
		lines = append(lines, line)
	}
	var b strings.Builder
	if v.tty && v.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", v.drawn) // back to the first line
	}
	for _, l := range lines {
		if v.tty {
			b.WriteString("\x1b[2K") // clear the old line
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	v.drawn = len(lines)
	_, err := io.WriteString(v.w, b.String())
	return err
}

// regionText renders one region: its bar (progressbar, rendered to a
// string) and its counts, or its status alone without an estimate.
func (v *watchView) regionText(r regionLine, width int) string {
	name := fmt.Sprintf("%-*s", width, r.region)
	rest := fmt.Sprintf("%s  %d failed  %d workers", r.status, r.failed, r.workers)
	if r.total == 0 {
		return fmt.Sprintf("%s  %d done  %s", name, r.done, rest)
	}
	bar, ok := v.bars[r.region]
	if !ok {
		bar = progressbar.NewOptions64(r.total,
			progressbar.OptionSetWriter(io.Discard), // drawn by show, several bars at once
			progressbar.OptionSetWidth(watchBarWidth),
			progressbar.OptionSetDescription(name),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionSetElapsedTime(false),
			progressbar.OptionThrottle(0),
		)
		_ = bar.RenderBlank() // a bar at 0 is drawn too
		v.bars[r.region] = bar
	}
	_ = bar.Set64(min(r.done, r.total))
	return fmt.Sprintf("%s  %d/%d  %s", strings.TrimSpace(strings.TrimPrefix(bar.String(), "\r")), r.done, r.total, rest)
}

// printJSONLine writes v as one line of JSON.
func printJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// isTerminalWriter reports whether w is a terminal (where lines can be
// redrawn in place).
func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}
