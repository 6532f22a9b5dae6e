package bench

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/transport/api"
)

func TestFormatMs(t *testing.T) {
	tests := []struct {
		ms   float64
		want string
	}{
		{0, "0 µs"}, {0.0421, "42 µs"}, {0.85, "850 µs"}, {1.254, "1.25 ms"},
		{42.26, "42.3 ms"}, {312.4, "312 ms"}, {1500, "1.50 s"},
	}
	for _, tt := range tests {
		if got := FormatMs(tt.ms); got != tt.want {
			t.Errorf("FormatMs(%v) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567.4: "1,234,567", -12345: "-12,345"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q, want %q", v, got, want)
		}
	}
}

func sampleResult() *Result {
	return &Result{
		Target: TargetStrata, Workload: WorkloadWorkflowDispatched, Tier: TierRegional, Durability: DurabilityRegional,
		Addrs: []string{"http://127.0.30.2:8080"}, Clients: 64, Batch: 1, BodyBytes: 201,
		StartedAt: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), ElapsedSec: 10,
		Requests: 123456, Events: 123450, Failed: 3,
		Errors:         map[string]int64{"503 unavailable": 2, "timeout": 1},
		RejectedEvents: map[string]int64{"conflict": 6},
		RequestsPerSec: 12345.6, EventsPerSec: 12345,
		Latency: Latency{P50: 4.2, P90: 7, P99: 12.5, P999: 40, Max: 120, Mean: 5},
	}
}

func TestResult_TableNamesEverything(t *testing.T) {
	var b bytes.Buffer
	if err := sampleResult().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"strata, regional tier, durability regional (1 address)",
		"workflow-dispatched-events: 1 event per request, 201-byte bodies, 64 clients",
		"123,456 ok, 3 failed", "12,346 req/s", "12,345 events/s",
		"p50 4.20 ms", "p99 12.5 ms", "p99.9 40.0 ms", "max 120 ms",
		"503 unavailable: 2", "timeout: 1", "conflict: 6",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestResult_JSONRoundTrips(t *testing.T) {
	r := sampleResult()
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var got Result
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&got, r) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, *r)
	}
	if !strings.Contains(b.String(), `"latency_ms"`) || !strings.Contains(b.String(), `"events_per_s"`) {
		t.Fatalf("JSON lacks unit-named fields:\n%s", b.String())
	}
}

func TestTierAddrs(t *testing.T) {
	cf := api.ClusterFile{Nodes: []api.ClusterNode{
		{NodeID: "use1-gate1", Role: "gate", Region: "use1", APIAddr: "127.0.30.1:8080"},
		{NodeID: "use1-mgr1", Role: "manager", Region: "use1", APIAddr: "127.0.30.2:8080"},
		{NodeID: "use1-mgr2", Role: "manager", Region: "use1", APIAddr: "127.0.30.3:8080"},
		{NodeID: "euw1-gate1", Role: "gate", Region: "euw1", APIAddr: "127.0.31.1:8080"},
		{NodeID: "euw1-mgr1", Role: "manager", Region: "euw1", APIAddr: "127.0.31.2:8080"},
	}}
	tests := []struct {
		tier, region string
		want         []string
		wantErr      string
	}{
		{TierGlobal, "use1", []string{"127.0.30.1:8080", "127.0.31.1:8080"}, ""},
		{TierRegional, "use1", []string{"127.0.30.2:8080", "127.0.30.3:8080"}, ""},
		{TierRegional, "apse1", nil, `no manager of region "apse1"`},
	}
	for _, tt := range tests {
		got, err := TierAddrs(&cf, tt.tier, tt.region)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s %s: error %v, want %q", tt.tier, tt.region, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s %s: %v, %v; want %v", tt.tier, tt.region, got, err, tt.want)
		}
	}
}
