package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/strata-ledger/strata/transport/progress"
)

// DataPlaneResult is what one `strata bench progress` run measured; `-o
// json` prints it. Manager figures are summed over the managers of the
// region (Managers); frame counts are frames (HTTP: requests).
type DataPlaneResult struct {
	Transport string   `json:"transport"`
	Region    string   `json:"region"`
	JobID     string   `json:"job_id"`
	Managers  []string `json:"managers"`
	Workers   int      `json:"workers"`
	Workflows int      `json:"workflows"` // driven by the bench's workers
	// WorkflowsElsewhere were leased to other workers and left alone.
	WorkflowsElsewhere int       `json:"workflows_elsewhere"`
	RateTarget         float64   `json:"rate_target"` // updates/s asked for; 0: as fast as possible
	Loss               float64   `json:"loss"`
	Dup                float64   `json:"dup"`
	Reorder            bool      `json:"reorder"`
	StartedAt          time.Time `json:"started_at"`
	ElapsedSec         float64   `json:"elapsed_s"` // of the load

	// Sent is updates the workers put into frames (HTTP: into calls)
	// during the load, before any injected loss; Frames the frames
	// written (after loss and duplication) or HTTP calls made.
	Sent          int64   `json:"sent"`
	SentPerSec    float64 `json:"sent_per_s"`
	Frames        int64   `json:"frames"`
	SendErrors    int64   `json:"send_errors"`
	InjectedLost  int64   `json:"injected_lost"` // frames
	InjectedDup   int64   `json:"injected_dup"`  // frames
	LastSendError string  `json:"last_send_error,omitempty"`

	// Folded is the managers' strata_progress_updates_total over the load
	// (HTTP: updates the progress calls acknowledged at LOCAL), and
	// UpdatesPerSec that per second of the load.
	Folded        int64   `json:"folded"`
	UpdatesPerSec float64 `json:"updates_per_s"`
	// DroppedKernel is the machine's UDP InErrors over the load (every
	// UDP socket of the machine counts; RcvbufErrors among them);
	// DroppedApp the managers' strata_progress_dropped_total (frames; for
	// stale_fence, updates), by reason in DroppedAppByReason.
	DroppedKernel      int64            `json:"dropped_kernel"`
	DroppedKernelBuf   int64            `json:"dropped_kernel_rcvbuf"`
	DroppedApp         int64            `json:"dropped_app"`
	DroppedAppByReason map[string]int64 `json:"dropped_app_by_reason,omitempty"`
	// LossPct is the share of the frames written that never folded:
	// dropped by the kernel or by the managers (data plane), or of the
	// updates sent that were not acknowledged (HTTP). Injected loss is
	// not in it.
	LossPct float64 `json:"loss_pct"`

	// Exact: at the end the regional ledger held exactly the last
	// counters sent for every workflow driven (Mismatched: how many did
	// not), SettleSec after the load ended.
	Exact      bool    `json:"exact"`
	Mismatched int     `json:"mismatched"`
	SettleSec  float64 `json:"settle_s"`
	// ExactGlobal: then the global ledger's totals of the job in the
	// region (what the gates serve) equalled the regional ledger's sum
	// over the job's workflows.
	ExactGlobal bool `json:"exact_global"`

	// CPUSec is the managers' process CPU over the load
	// (process_cpu_seconds_total); CPUMicrosPer1k that per 1,000 updates
	// folded.
	CPUSec         float64 `json:"cpu_s"`
	CPUMicrosPer1k float64 `json:"cpu_us_per_1k_updates"`
	// P99MsToLocal is the p99 of strata_progress_local_seconds over the
	// run (a flush's oldest update from its fold to LOCAL, the 500 ms
	// flush tick included); P99MsFlush of the flush itself (drained →
	// LOCAL). Null when no flush was observed (HTTP).
	P99MsToLocal *float64 `json:"p99_ms_to_local"`
	P99MsFlush   *float64 `json:"p99_ms_flush"`
	// HeartbeatsLost counts heartbeats answered "unknown worker".
	HeartbeatsLost int64 `json:"heartbeats_lost,omitempty"`
}

// dataPlaneInput is what a run hands to assembleDataPlane.
type dataPlaneInput struct {
	cfg                    DataPlaneConfig
	jobID                  string
	managers               []string
	workflows, elsewhere   int
	start                  time.Time
	elapsed, settle        time.Duration
	exact, exactGlobal     bool
	mismatched             int
	sent, frames, sendErr  int64
	acked                  int64
	inject                 InjectStats
	lastErr                string
	before, after, settled dpSnapshot
	hbLost                 int64
}

// assembleDataPlane computes the result from the counts and the metrics
// read before the load, after it, and after the ledger settled.
func assembleDataPlane(in dataPlaneInput) *DataPlaneResult {
	c := in.cfg
	r := &DataPlaneResult{
		Transport: c.Transport, Region: c.Region, JobID: in.jobID, Managers: in.managers,
		Workers: c.Workers, Workflows: in.workflows, WorkflowsElsewhere: in.elsewhere,
		RateTarget: c.Rate, Loss: c.Loss, Dup: c.Dup, Reorder: c.Reorder,
		StartedAt: in.start.UTC(), ElapsedSec: in.elapsed.Seconds(),
		Sent: in.sent, Frames: in.frames, SendErrors: in.sendErr,
		InjectedLost: in.inject.Lost, InjectedDup: in.inject.Duplicated, LastSendError: in.lastErr,
		Exact: in.exact, ExactGlobal: in.exactGlobal, Mismatched: in.mismatched, SettleSec: in.settle.Seconds(), HeartbeatsLost: in.hbLost,
	}
	secs := in.elapsed.Seconds()
	per := func(n float64) float64 {
		if secs <= 0 {
			return 0
		}
		return n / secs
	}
	r.SentPerSec = per(float64(in.sent))
	b, a := in.before.m, in.after.m
	if c.Transport == TransportHTTP {
		r.Folded = in.acked
	} else {
		r.Folded = int64(a.Sum(metricUpdates) - b.Sum(metricUpdates))
	}
	r.UpdatesPerSec = per(float64(r.Folded))
	if in.before.udp.ok && in.after.udp.ok {
		r.DroppedKernel = int64(in.after.udp.InErrors - in.before.udp.InErrors)
		r.DroppedKernelBuf = int64(in.after.udp.RcvbufErrors - in.before.udp.RcvbufErrors)
	}
	bd, ad := b.ByLabel(metricDropped, "reason"), a.ByLabel(metricDropped, "reason")
	frameDrops := int64(0)
	for _, reason := range slices.Sorted(maps.Keys(ad)) {
		n := int64(ad[reason] - bd[reason])
		if n <= 0 {
			continue
		}
		if r.DroppedAppByReason == nil {
			r.DroppedAppByReason = map[string]int64{}
		}
		r.DroppedAppByReason[reason] = n
		r.DroppedApp += n
		if reason != progress.ReasonStaleFence && reason != progress.ReasonConnLimit {
			frameDrops += n
		}
	}
	switch {
	case c.Transport == TransportHTTP && in.sent > 0:
		r.LossPct = 100 * float64(in.sent-in.acked) / float64(in.sent)
	case c.Transport != TransportHTTP && in.frames > 0:
		lost := frameDrops
		if c.Transport == TransportUDP {
			lost += r.DroppedKernel
		}
		r.LossPct = 100 * float64(lost) / float64(in.frames)
	}
	r.CPUSec = a.Sum(metricCPU) - b.Sum(metricCPU)
	if r.Folded > 0 {
		r.CPUMicrosPer1k = r.CPUSec * 1e6 / (float64(r.Folded) / 1000)
	}
	s := in.settled.m
	r.P99MsToLocal = quantileMs(s.Buckets(metricLocal).Sub(b.Buckets(metricLocal)), 0.99)
	r.P99MsFlush = quantileMs(s.Buckets(metricFlush).Sub(b.Buckets(metricFlush)), 0.99)
	return r
}

// quantileMs is b's q-quantile in milliseconds, nil when b is empty.
func quantileMs(b Buckets, q float64) *float64 {
	v := b.Quantile(q)
	if math.IsNaN(v) {
		return nil
	}
	ms := v * 1000
	return &ms
}

// WriteJSON writes r as indented JSON.
func (r *DataPlaneResult) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes r for a person.
func (r *DataPlaneResult) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...) }
	p("transport", "%s (region %s, job %s, %d managers)", r.Transport, r.Region, r.JobID, len(r.Managers))
	p("workers", "%d, %d workflows (%d elsewhere)", r.Workers, r.Workflows, r.WorkflowsElsewhere)
	p("injected", "loss %.3g, dup %.3g, reorder %v: %d frames lost, %d duplicated", r.Loss, r.Dup, r.Reorder, r.InjectedLost, r.InjectedDup)
	p("sent", "%d updates in %.2fs (%.0f/s), %d frames, %d send errors", r.Sent, r.ElapsedSec, r.SentPerSec, r.Frames, r.SendErrors)
	p("folded", "%d updates (%.0f/s)", r.Folded, r.UpdatesPerSec)
	p("dropped", "kernel %d, app %d %v, loss %.3f %%", r.DroppedKernel, r.DroppedApp, r.DroppedAppByReason, r.LossPct)
	p("exact", "%v (%d mismatched, settled in %.2fs); global ledger exact: %v", r.Exact, r.Mismatched, r.SettleSec, r.ExactGlobal)
	p("cpu", "%.2fs managers, %.1f µs per 1k updates", r.CPUSec, r.CPUMicrosPer1k)
	p("p99 to LOCAL", "%s (flush %s)", msOrNone(r.P99MsToLocal), msOrNone(r.P99MsFlush))
	return tw.Flush()
}

func msOrNone(v *float64) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprintf("%.1f ms", *v)
}

// startDataPlaneBar draws a bar over the load's duration to w until the
// returned stop is called; a nil w draws nothing.
func startDataPlaneBar(w io.Writer, p *DataPlaneProgress, duration time.Duration) (stop func()) {
	limit := int64(duration / time.Millisecond)
	return drawBar(w, limit, func(elapsed time.Duration) (string, int64) {
		sent := p.Sent.Load()
		return fmt.Sprintf("%d updates sent, %.0f/s", sent, float64(sent)/elapsed.Seconds()), min(int64(elapsed/time.Millisecond), limit)
	})
}
