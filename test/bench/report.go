package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is what one run measured; `strata bench -o json` prints it.
type Result struct {
	Target     string    `json:"target"`
	Workload   string    `json:"workload"`
	Tier       string    `json:"tier,omitempty"`
	Durability string    `json:"durability,omitempty"`
	Addrs      []string  `json:"addrs"`
	Clients    int       `json:"clients"`
	Batch      int       `json:"batch"`
	BodyBytes  int       `json:"body_bytes"` // per event: binary body (Strata) or value (etcd)
	StartedAt  time.Time `json:"started_at"`
	ElapsedSec float64   `json:"elapsed_s"`

	Requests       int64            `json:"requests"` // answered with success
	Events         int64            `json:"events"`   // carried by those, minus rejected events
	Failed         int64            `json:"failed"`   // requests that failed
	Errors         map[string]int64 `json:"errors,omitempty"`
	RejectedEvents map[string]int64 `json:"rejected_events,omitempty"`
	RequestsPerSec float64          `json:"requests_per_s"`
	EventsPerSec   float64          `json:"events_per_s"`

	// Latency of successful requests, milliseconds: from the send in a
	// closed loop, from the slot the request was due in an open loop.
	Latency Latency `json:"latency_ms"`

	// Rate describes an open-loop run's schedule; nil for a closed loop.
	Rate *Rate `json:"rate,omitempty"`

	// TLS: the run talked TLS to the nodes.
	TLS bool `json:"tls,omitempty"`
}

// Rate is what an open-loop run scheduled and what it managed to send.
// A late slot still waiting at the end is counted both late and unsent.
type Rate struct {
	TargetPerSec   float64 `json:"target_per_s"`   // the --rate asked for
	AchievedPerSec float64 `json:"achieved_per_s"` // slots a worker took, per second of the run
	Sent           int64   `json:"sent"`           // slots a worker took
	Late           int64   `json:"late"`           // slots that came due while every worker was busy
	Unsent         int64   `json:"unsent"`         // slots due by the end that no worker took
	MaxLagMs       float64 `json:"max_lag_ms"`     // the longest from a slot's due time to a worker taking it
}

// Latency summarises the latency histogram, in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

func newResult(cfg Config, s *spec, bases []string, start time.Time, elapsed time.Duration, clients []*client, p *pacer) *Result {
	r := &Result{
		Target: cfg.Target, Workload: s.workload, Addrs: bases, Clients: cfg.Clients, Batch: cfg.Batch,
		BodyBytes: s.bodyBytes, StartedAt: start.UTC(), ElapsedSec: elapsed.Seconds(),
		Errors: map[string]int64{}, RejectedEvents: map[string]int64{},
	}
	if cfg.Target == TargetStrata {
		r.Tier, r.Durability = cfg.Tier, cfg.Durability
	}
	var h Histogram
	var maxLag time.Duration
	for _, c := range clients {
		maxLag = max(maxLag, c.maxLag)
		h.Merge(&c.hist)
		r.Requests += c.ok
		r.Events += c.events
		r.Failed += c.failed
		for k, v := range c.errors {
			r.Errors[k] += v
		}
		for k, v := range c.rejected {
			r.RejectedEvents[k] += v
		}
	}
	if elapsed > 0 {
		r.RequestsPerSec = float64(r.Requests) / elapsed.Seconds()
		r.EventsPerSec = float64(r.Events) / elapsed.Seconds()
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	r.Latency = Latency{
		P50: ms(h.Quantile(0.5)), P90: ms(h.Quantile(0.9)), P99: ms(h.Quantile(0.99)),
		P999: ms(h.Quantile(0.999)), Max: ms(h.Max()), Mean: ms(h.Mean()),
	}
	if p != nil {
		r.Rate = &Rate{TargetPerSec: p.rate, Sent: p.sent, Late: p.late, Unsent: p.unsent, MaxLagMs: ms(maxLag)}
		if elapsed > 0 {
			r.Rate.AchievedPerSec = float64(p.sent) / elapsed.Seconds()
		}
	}
	return r
}

// WriteJSON writes r as one indented JSON object.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes r for a person to read.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	target := r.Target
	if r.Tier != "" {
		target = fmt.Sprintf("%s, %s tier, durability %s", r.Target, r.Tier, r.Durability)
	}
	fmt.Fprintf(tw, "target\t%s (%d address%s)\n", target, len(r.Addrs), plural(len(r.Addrs), "es"))
	senders := "client"
	if r.Rate != nil {
		senders = "worker"
	}
	fmt.Fprintf(tw, "workload\t%s: %d event%s per request, %d-byte bodies, %d %s%s\n",
		r.Workload, r.Batch, plural(r.Batch, "s"), r.BodyBytes, r.Clients, senders, plural(r.Clients, "s"))
	fmt.Fprintf(tw, "elapsed\t%.2f s\n", r.ElapsedSec)
	if o := r.Rate; o != nil {
		fmt.Fprintf(tw, "open loop\ttarget %s req/s, sent %s req/s\tlatency counts from each request's due time\n",
			perSec(o.TargetPerSec), perSec(o.AchievedPerSec))
		fmt.Fprintf(tw, "behind\t%s late (due while all %d workers were busy; sent when one was free), %s unsent at the end, max lag from due to sent %s\n",
			thousands(float64(o.Late)), r.Clients, thousands(float64(o.Unsent)), FormatMs(o.MaxLagMs))
	}
	fmt.Fprintf(tw, "requests\t%s ok, %s failed\t%s req/s\n", thousands(float64(r.Requests)), thousands(float64(r.Failed)), thousands(r.RequestsPerSec))
	fmt.Fprintf(tw, "events\t%s ok\t%s events/s\n", thousands(float64(r.Events)), thousands(r.EventsPerSec))
	l := r.Latency
	fmt.Fprintf(tw, "latency\tp50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n",
		FormatMs(l.P50), FormatMs(l.P90), FormatMs(l.P99), FormatMs(l.P999), FormatMs(l.Max))
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		fmt.Fprintf(tw, "error\t%s: %d\n", k, r.Errors[k])
	}
	for _, k := range slices.Sorted(maps.Keys(r.RejectedEvents)) {
		fmt.Fprintf(tw, "rejected events\t%s: %d\n", k, r.RejectedEvents[k])
	}
	return tw.Flush()
}

// FormatMs renders milliseconds with a unit that keeps three significant
// figures: "850 µs", "1.25 ms", "312 ms", "1.50 s".
func FormatMs(ms float64) string {
	switch {
	case ms < 1:
		return fmt.Sprintf("%.0f µs", ms*1000)
	case ms < 10:
		return fmt.Sprintf("%.2f ms", ms)
	case ms < 100:
		return fmt.Sprintf("%.1f ms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.2f s", ms/1000)
}

// perSec renders a rate: two decimals below 10, else as thousands.
func perSec(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.2f", v)
	}
	return thousands(v)
}

// thousands renders v rounded, with comma separators: 12,345.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func plural(n int, suffix string) string {
	if n == 1 {
		return ""
	}
	return suffix
}

// MaxResultFileBytes bounds one result file the BENCHMARKS.md renderers
// read: a few hundred bytes in practice.
const MaxResultFileBytes = 1 << 20

// ReadResultFile reads the JSON result of one run (`-o json`) from path
// into v, refusing a file over MaxResultFileBytes; what names the kind
// of result in errors.
func ReadResultFile(path, what string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxResultFileBytes+1))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > MaxResultFileBytes {
		return fmt.Errorf("%s: more than %d bytes: not a %s", path, MaxResultFileBytes, what)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: not a %s: %w", path, what, err)
	}
	return nil
}
