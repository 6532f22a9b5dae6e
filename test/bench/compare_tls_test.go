package bench

import (
	"strings"
	"testing"
)

func TestRenderCompare_TLSRowsFollowTheirPlainTwinsAndTheCostIsStated(t *testing.T) {
	regional := func(clients int, eventsPerSec, p50, p99 float64, tls bool) *Result {
		return &Result{Target: TargetStrata, Workload: WorkloadWorkflowDispatched, Tier: TierRegional, Durability: DurabilityRegional,
			Clients: clients, Batch: 1, BodyBytes: 200, RequestsPerSec: eventsPerSec, EventsPerSec: eventsPerSec,
			Latency: Latency{P50: p50, P99: p99}, TLS: tls}
	}
	plain1, tls1 := regional(1, 400, 2, 5, false), regional(1, 300, 3, 6, true)
	plain64, tls64 := regional(64, 2000, 20, 50, false), regional(64, 1800, 24, 40, true)
	plainRate, tlsRate := regional(64, 1000, 10, 30, false), regional(64, 990, 12, 45, true)
	plainRate.Rate = &Rate{TargetPerSec: 1000, AchievedPerSec: 1000}
	tlsRate.Rate = &Rate{TargetPerSec: 1000, AchievedPerSec: 990}
	lonely := regional(256, 100, 1, 1, true) // no plain twin: in the table, not in the cost

	out := RenderCompare([]*Result{tls64, lonely, tlsRate, plain1, plainRate, tls1, plain64}, CompareEnv{})
	var systems []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "| **Strata**") {
			systems = append(systems, strings.SplitN(l, " | ", 5)[3]+" "+strings.SplitN(l, " | ", 2)[0])
		}
	}
	want := []string{"1 | **Strata** REGIONAL ack", "1 | **Strata** REGIONAL ack, TLS", "64 | **Strata** REGIONAL ack", "64 | **Strata** REGIONAL ack, TLS",
		"64, open loop at 1,000 req/s | **Strata** REGIONAL ack", "64, open loop at 1,000 req/s | **Strata** REGIONAL ack, TLS", "256 | **Strata** REGIONAL ack, TLS"}
	if strings.Join(systems, "\n") != strings.Join(want, "\n") {
		t.Fatalf("row order:\n%s\nwant:\n%s", strings.Join(systems, "\n"), strings.Join(want, "\n"))
	}
	for _, line := range []string{
		"| REGIONAL ack | 1 | 1 | 0.75× | 1.50× | 1.20× |",
		"| REGIONAL ack | 64 | 1 | 0.90× | 1.20× | 0.80× |",
		"| REGIONAL ack | 64, open loop at 1,000 req/s | 1 | 0.99× | 1.20× | 1.50× |",
		"Median over the 2 closed-loop pairs: TLS runs at **0.82×** the events/s of plain HTTP.",
		"**REGIONAL (TLS) p99 at 1,000 req/s (56 % of max throughput)",
		"**REGIONAL p99 at half of max throughput (1,000 req/s)",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("missing %q in\n%s", line, out)
		}
	}
	if strings.Contains(out, "| REGIONAL ack | 256 |") {
		t.Errorf("a TLS row without a plain twin got a ratio:\n%s", out)
	}
	if plainOnly := RenderCompare([]*Result{plain1, plain64}, CompareEnv{}); strings.Contains(plainOnly, "Cost of TLS") {
		t.Errorf("a run without TLS rows states a cost:\n%s", plainOnly)
	}
}
