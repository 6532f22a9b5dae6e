package bench

import (
	"strings"
	"testing"
)

func TestRenderCompare_RowsAndRatios(t *testing.T) {
	etcd1 := &Result{Target: TargetEtcd, Workload: WorkloadEtcdPut, Clients: 1, Batch: 1, BodyBytes: 200,
		RequestsPerSec: 1000, EventsPerSec: 1000, Latency: Latency{P50: 0.9, P99: 2}}
	etcd64 := &Result{Target: TargetEtcd, Workload: WorkloadEtcdPut, Clients: 64, Batch: 1, BodyBytes: 200,
		RequestsPerSec: 8000, EventsPerSec: 8000, Latency: Latency{P50: 7, P99: 20}, Failed: 2}
	reg64 := &Result{Target: TargetStrata, Workload: WorkloadWorkflowDispatched, Tier: TierRegional, Durability: DurabilityRegional,
		Clients: 64, Batch: 1, BodyBytes: 201, RequestsPerSec: 12000, EventsPerSec: 12000, Latency: Latency{P50: 5, P99: 15},
		RejectedEvents: map[string]int64{"conflict": 3}}
	batched := &Result{Target: TargetStrata, Workload: WorkloadWorkflowDispatched, Tier: TierRegional, Durability: DurabilityRegional,
		Clients: 4, Batch: 1000, BodyBytes: 201, RequestsPerSec: 100, EventsPerSec: 100000, Latency: Latency{P50: 40, P99: 90}}
	global1 := &Result{Target: TargetStrata, Workload: WorkloadJobSubmit, Tier: TierGlobal, Durability: DurabilityGlobal,
		Clients: 1, Batch: 1, BodyBytes: 200, RequestsPerSec: 500, EventsPerSec: 500, Latency: Latency{P50: 2, P99: 4}}

	atRate := &Result{Target: TargetStrata, Workload: WorkloadWorkflowDispatched, Tier: TierRegional, Durability: DurabilityRegional,
		Clients: 64, Batch: 1, BodyBytes: 201, RequestsPerSec: 5990, EventsPerSec: 5990, Latency: Latency{P50: 2, P99: 8.5},
		Rate: &Rate{TargetPerSec: 6000, AchievedPerSec: 5995, Late: 4, Unsent: 0, MaxLagMs: 3}}

	out := RenderCompare([]*Result{global1, atRate, batched, reg64, etcd64, etcd1}, CompareEnv{When: "today", Machine: "a box", EtcdVersion: "3.4.23"})
	lines := strings.Split(out, "\n")
	var rows []string
	for _, l := range lines {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| system") {
			rows = append(rows, l)
		}
	}
	want := []string{
		"| etcd | put | 200 B | 1 | 1 | 1,000 | 1,000 | 900 µs | 2.00 ms | 0 | 1.00× |",
		"| etcd | put | 200 B | 64 | 1 | 8,000 | 8,000 | 7.00 ms | 20.0 ms | 2 | 1.00× |",
		"| **Strata** REGIONAL ack | WorkflowDispatched events (`POST /v1/events:batch`) | 201 B | 64 | 1 | 12,000 | 12,000 | 5.00 ms | 15.0 ms | 3 | 1.50× |",
		"| **Strata** REGIONAL ack | WorkflowDispatched events (`POST /v1/events:batch`) | 201 B | 64, open loop at 6,000 req/s | 1 | 5,990 | 5,990 | 2.00 ms | 8.50 ms | 0 | — |",
		"| **Strata** REGIONAL ack | WorkflowDispatched events (`POST /v1/events:batch`) | 201 B | 4 | 1000 | 100 | 100,000 | 40.0 ms | 90.0 ms | 0 | — |",
		"| **Strata** GLOBAL ack | job submit (`POST /v1/jobs`) | 200 B | 1 | 1 | 500 | 500 | 2.00 ms | 4.00 ms | 0 | 0.50× |",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(out, "etcd 3.4.23") || !strings.Contains(out, "Measured today on a box.") || !strings.Contains(out, "Open loop (rows with a rate)") {
		t.Fatalf("header missing:\n%s", out)
	}
	wantLine := "**REGIONAL p99 at half of max throughput (6,000 req/s): 8.50 ms (target < 10 ms) — met.** " +
		"Max throughput: 12,000 req/s, the best closed-loop REGIONAL row at 1 event per request (64 clients). " +
		"Open loop over 64 workers: sent 5,995 req/s; 4 late (due while every worker was busy), 0 unsent at the end, max lag from due to sent 3.00 ms.\n"
	if !strings.Contains(out, wantLine) {
		t.Fatalf("no line for the open-loop row; want\n%s\nin\n%s", wantLine, out)
	}
}

func TestRenderCompare_RegionalAtRateNamesItsShareOfTheMaximum(t *testing.T) {
	regional := func(clients int, reqPerSec, rate, p99 float64) *Result {
		r := &Result{Target: TargetStrata, Workload: WorkloadWorkflowDispatched, Tier: TierRegional, Durability: DurabilityRegional,
			Clients: clients, Batch: 1, RequestsPerSec: reqPerSec, EventsPerSec: reqPerSec, Latency: Latency{P99: p99}}
		if rate > 0 {
			r.Rate = &Rate{TargetPerSec: rate, AchievedPerSec: rate}
		}
		return r
	}
	tests := []struct {
		name string
		rows []*Result
		want string
	}{
		{"half of the best closed-loop row", []*Result{regional(64, 2100, 0, 0), regional(256, 2000, 0, 0), regional(256, 0, 1000, 12)},
			"**REGIONAL p99 at half of max throughput (1,000 req/s): 12.0 ms (target < 10 ms) — missed.** Max throughput: 2,100 req/s, the best closed-loop REGIONAL row at 1 event per request (64 clients)."},
		{"not half", []*Result{regional(256, 2000, 0, 0), regional(256, 0, 1500, 4)},
			"**REGIONAL p99 at 1,500 req/s (75 % of max throughput): 4.00 ms (target < 10 ms) — met.**"},
		{"no closed-loop row", []*Result{regional(256, 0, 1500, 4)},
			"**REGIONAL p99 at 1,500 req/s: 4.00 ms (target < 10 ms) — met.** Open loop over 256 workers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if out := RenderCompare(tt.rows, CompareEnv{}); !strings.Contains(out, tt.want) {
				t.Fatalf("want\n%s\nin\n%s", tt.want, out)
			}
		})
	}
}

func TestSpliceCompare(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"empty file", "", "# Benchmarks\n\n## bench-compare\n\n" + compareBeginMarker + "\nT\n" + compareEndMarker + "\n"},
		{"appended after other sections", "# Benchmarks\n\n## NodeWAL\n\nx\n",
			"# Benchmarks\n\n## NodeWAL\n\nx\n\n## bench-compare\n\n" + compareBeginMarker + "\nT\n" + compareEndMarker + "\n"},
		{"heading without markers", "# B\n\n## bench-compare\nnotes\n",
			"# B\n\n## bench-compare\n\n" + compareBeginMarker + "\nT\n" + compareEndMarker + "\nnotes\n"},
		{"replaced between markers, notes kept", "# B\n\n## bench-compare\n\n" + compareBeginMarker + "\nold\n" + compareEndMarker + "\n\nnotes\n## Next\n",
			"# B\n\n## bench-compare\n\n" + compareBeginMarker + "\nT\n" + compareEndMarker + "\n\nnotes\n## Next\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(SpliceCompare([]byte(tt.doc), "T\n")); got != tt.want {
				t.Fatalf("got:\n%q\nwant:\n%q", got, tt.want)
			}
		})
	}
}
