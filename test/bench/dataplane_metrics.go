package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
)

// What `strata bench progress` reads from the managers' GET /metrics
// (Prometheus text format) and from the kernel's UDP counters.
const (
	metricUpdates  = "strata_progress_updates_total"
	metricDropped  = "strata_progress_dropped_total"
	metricCPU      = "process_cpu_seconds_total"
	metricLocal    = "strata_progress_local_seconds"
	metricFlush    = "strata_progress_flush_duration_seconds"
	metricQueue    = "strata_progress_queue_fill"
	maxMetricBytes = 8 << 20
)

// Sample is one series of a metrics page: name, labels as written between
// the braces (`reason="bad_mac"`), value.
type Sample struct {
	Name   string
	Labels string
	Value  float64
}

// Metrics is one node's metrics page.
type Metrics []Sample

// ParseMetrics reads the Prometheus text format: comments and blank lines
// are skipped, a line that does not parse is an error.
func ParseMetrics(r io.Reader) (Metrics, error) {
	var out Metrics
	sc := bufio.NewScanner(io.LimitReader(r, maxMetricBytes))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		var s Sample
		rest := line
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				return nil, fmt.Errorf("metrics line %d: unbalanced braces: %q", n, line)
			}
			s.Name, s.Labels, rest = line[:i], line[i+1:j], line[j+1:]
		} else {
			var ok bool
			if s.Name, rest, ok = strings.Cut(line, " "); !ok {
				return nil, fmt.Errorf("metrics line %d: no value: %q", n, line)
			}
		}
		fields := strings.Fields(rest) // value [timestamp]
		if len(fields) == 0 {
			return nil, fmt.Errorf("metrics line %d: no value: %q", n, line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: %w", n, err)
		}
		s.Value = v
		out = append(out, s)
	}
	return out, sc.Err()
}

// Sum is the sum of every series of name.
func (m Metrics) Sum(name string) float64 {
	var t float64
	for _, s := range m {
		if s.Name == name {
			t += s.Value
		}
	}
	return t
}

// ByLabel sums the series of name by the value of label.
func (m Metrics) ByLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m {
		if s.Name == name {
			out[labelValue(s.Labels, label)] += s.Value
		}
	}
	return out
}

// labelValue is label's value in a label list, "" if absent.
func labelValue(labels, label string) string {
	for _, kv := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if ok && k == label {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// Buckets is a histogram's cumulative bucket counts by upper bound
// (+Inf included), summed over the pages it was read from.
type Buckets map[float64]float64

// Buckets reads histogram name's buckets.
func (m Metrics) Buckets(name string) Buckets {
	out := Buckets{}
	for _, s := range m {
		if s.Name != name+"_bucket" {
			continue
		}
		le, err := strconv.ParseFloat(labelValue(s.Labels, "le"), 64) // "+Inf" parses
		if err == nil {
			out[le] += s.Value
		}
	}
	return out
}

// Sub returns b − a, bound by bound: the observations between two reads.
func (b Buckets) Sub(a Buckets) Buckets {
	out := Buckets{}
	for le, v := range b {
		out[le] = v - a[le]
	}
	return out
}

// Quantile estimates the q-quantile of the observations in b as
// Prometheus' histogram_quantile does: linear within the bucket it falls
// in; the highest finite bound when it falls in +Inf; NaN when b is empty.
func (b Buckets) Quantile(q float64) float64 {
	bounds := make([]float64, 0, len(b))
	for le := range b {
		bounds = append(bounds, le)
	}
	slices.Sort(bounds)
	if len(bounds) == 0 {
		return math.NaN()
	}
	total := b[bounds[len(bounds)-1]]
	if total <= 0 {
		return math.NaN()
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for i, le := range bounds {
		c := b[le]
		if c >= rank {
			if math.IsInf(le, 1) {
				if i == 0 {
					return math.NaN()
				}
				return bounds[i-1]
			}
			if c == below {
				return le
			}
			return lower + (le-lower)*(rank-below)/(c-below)
		}
		lower, below = le, c
	}
	return bounds[len(bounds)-1]
}

// scrapeMetrics reads base's GET /metrics.
func scrapeMetrics(ctx context.Context, hc *http.Client, base string) (Metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s/metrics: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %s", base, resp.Status)
	}
	m, err := ParseMetrics(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s/metrics: %w", base, err)
	}
	return m, nil
}

// scrapeAll reads every base's metrics and joins them into one page (sums
// then add up over the nodes).
func scrapeAll(ctx context.Context, hc *http.Client, bases []string) (Metrics, error) {
	var all Metrics
	for _, b := range bases {
		m, err := scrapeMetrics(ctx, hc, b)
		if err != nil {
			return nil, err
		}
		all = append(all, m...)
	}
	return all, nil
}

// UDPCounters are the kernel's UDP counters of /proc/net/snmp (the whole
// machine: every UDP socket counts).
type UDPCounters struct {
	InErrors, RcvbufErrors uint64
	ok                     bool
}

// ParseSNMP reads the Udp lines of /proc/net/snmp: a header line of names
// and a line of values.
func ParseSNMP(r io.Reader) (UDPCounters, error) {
	sc := bufio.NewScanner(r)
	var names []string
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "Udp:" {
			continue
		}
		if names == nil {
			names = fields[1:]
			continue
		}
		var c UDPCounters
		for i, v := range fields[1:] {
			if i >= len(names) {
				break
			}
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return UDPCounters{}, fmt.Errorf("/proc/net/snmp Udp %s: %w", names[i], err)
			}
			switch names[i] {
			case "InErrors":
				c.InErrors, c.ok = n, true
			case "RcvbufErrors":
				c.RcvbufErrors = n
			}
		}
		if !c.ok {
			return UDPCounters{}, fmt.Errorf("/proc/net/snmp: no Udp InErrors")
		}
		return c, nil
	}
	if err := sc.Err(); err != nil {
		return UDPCounters{}, err
	}
	return UDPCounters{}, fmt.Errorf("/proc/net/snmp: no Udp counters")
}

// readUDPCounters reads the kernel's counters; zero (ok false) where there
// are none (not Linux).
func readUDPCounters() UDPCounters {
	f, err := os.Open("/proc/net/snmp")
	if err != nil {
		return UDPCounters{}
	}
	defer f.Close()
	c, err := ParseSNMP(f)
	if err != nil {
		return UDPCounters{}
	}
	return c
}
