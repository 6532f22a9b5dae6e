package bench

import (
	"fmt"
	"slices"
	"strings"
)

// The cost of TLS (issue 16): `make bench-compare` with BENCH_TLS=both
// runs every Strata row twice in one run, against `strata dev` and
// against `strata dev --tls`; the TLS rows carry Result.TLS. tlsCost
// pairs each TLS row with its plain twin and states the ratios.

// tlsTwinKey names what must be equal for a TLS row and a plain row to
// measure the same thing.
type tlsTwinKey struct {
	tier, durability, workload string
	batch, clients             int
	rate                       float64 // 0: closed loop
}

func twinKey(r *Result) tlsTwinKey {
	k := tlsTwinKey{tier: r.Tier, durability: r.Durability, workload: r.Workload, batch: r.Batch, clients: r.Clients}
	if r.Rate != nil {
		k.rate = r.Rate.TargetPerSec
	}
	return k
}

// tlsOrder puts a plain row before its TLS twin.
func tlsOrder(r *Result) int {
	if r.TLS {
		return 1
	}
	return 0
}

// tlsCost renders the ratios TLS/plain of every Strata row measured both
// ways, and the median of the closed-loop events/s ratios; "" when no
// row was measured with TLS.
func tlsCost(rows []*Result) string {
	plain := map[tlsTwinKey]*Result{}
	for _, r := range rows {
		if r.Target == TargetStrata && !r.TLS {
			plain[twinKey(r)] = r
		}
	}
	var b strings.Builder
	var closed []float64
	for _, r := range rows {
		p, ok := plain[twinKey(r)]
		if !r.TLS || !ok || p.EventsPerSec <= 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("**Cost of TLS** (same run: `strata dev --tls` — TLS 1.3 on the API, mutual TLS between nodes and on Raft, encrypted gossip — over `strata dev`; events/s below 1× and latency above 1× are TLS's cost):\n\n")
			b.WriteString("| system | clients | events/request | events/s TLS / plain | p50 TLS / plain | p99 TLS / plain |\n")
			b.WriteString("|---|---:|---:|---:|---:|---:|\n")
		}
		tput := r.EventsPerSec / p.EventsPerSec
		clients := fmt.Sprint(r.Clients)
		if r.Rate != nil {
			clients = fmt.Sprintf("%d, open loop at %s req/s", r.Clients, perSec(r.Rate.TargetPerSec))
		} else {
			closed = append(closed, tput)
		}
		fmt.Fprintf(&b, "| %s ack | %s | %d | %.2f× | %s | %s |\n", strings.ToUpper(r.Durability), clients, r.Batch,
			tput, latencyRatio(r.Latency.P50, p.Latency.P50), latencyRatio(r.Latency.P99, p.Latency.P99))
	}
	if b.Len() == 0 {
		return ""
	}
	if m, ok := medianOf(closed); ok {
		fmt.Fprintf(&b, "\nMedian over the %d closed-loop pairs: TLS runs at **%.2f×** the events/s of plain HTTP.\n", len(closed), m)
	}
	b.WriteString("\n")
	return b.String()
}

func latencyRatio(tlsMs, plainMs float64) string {
	if plainMs <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", tlsMs/plainMs)
}

// medianOf xs; false when xs is empty.
func medianOf(xs []float64) (float64, bool) {
	if len(xs) == 0 {
		return 0, false
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2, true
	}
	return s[n/2], true
}
