package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
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

	// Latency of successful requests, milliseconds.
	Latency Latency `json:"latency_ms"`
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

func newResult(cfg Config, s *spec, bases []string, start time.Time, elapsed time.Duration, clients []*client) *Result {
	r := &Result{
		Target: cfg.Target, Workload: s.workload, Addrs: bases, Clients: cfg.Clients, Batch: cfg.Batch,
		BodyBytes: s.bodyBytes, StartedAt: start.UTC(), ElapsedSec: elapsed.Seconds(),
		Errors: map[string]int64{}, RejectedEvents: map[string]int64{},
	}
	if cfg.Target == TargetStrata {
		r.Tier, r.Durability = cfg.Tier, cfg.Durability
	}
	var h Histogram
	for _, c := range clients {
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
	fmt.Fprintf(tw, "workload\t%s: %d event%s per request, %d-byte bodies, %d client%s\n",
		r.Workload, r.Batch, plural(r.Batch, "s"), r.BodyBytes, r.Clients, plural(r.Clients, "s"))
	fmt.Fprintf(tw, "elapsed\t%.2f s\n", r.ElapsedSec)
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
