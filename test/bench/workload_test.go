package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

func testSpec(t *testing.T, cfg Config) *spec {
	t.Helper()
	cfg.Addrs = []string{"127.0.0.1:1"}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	s, err := newSpec(cfg.withDefaults(), 0xdeadbeef, time.UnixMilli(1_704_931_200_000))
	if err != nil {
		t.Fatalf("newSpec: %v", err)
	}
	return s
}

// TestGenerator_EventJSONIsTheValidEvent: the hand-written JSON of a batch
// decodes (strictly, as the API decodes it) to exactly the events the
// generator describes as structs, and each passes fsm's Validate.
func TestGenerator_EventJSONIsTheValidEvent(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		workload string
	}{
		{"regional workflow events", Config{Tier: TierRegional, Batch: 3}, WorkloadWorkflowDispatched},
		{"regional single event", Config{Tier: TierRegional, Batch: 1, Durability: DurabilityLocal}, WorkloadWorkflowDispatched},
		{"global job created events", Config{Tier: TierGlobal, Batch: 3, Region: "euw1", Tenant: "acme"}, WorkloadJobCreatedBatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testSpec(t, tt.cfg)
			if s.workload != tt.workload {
				t.Fatalf("workload %s, want %s", s.workload, tt.workload)
			}
			g := s.generator(7)
			now := time.UnixMilli(1_704_931_200_123)
			for round := range 2 {
				body, n := g.next(now)
				if n != s.batch {
					t.Fatalf("round %d: %d events, want %d", round, n, s.batch)
				}
				var req api.BatchRequest
				dec := json.NewDecoder(bytes.NewReader(body))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&req); err != nil {
					t.Fatalf("round %d: decode %s: %v", round, body, err)
				}
				for i, got := range req.Events {
					seq := uint64(round*s.batch + i)
					want := g.event(seq)
					want.HLC = g.hlcAt(now, seq)
					if err := got.Validate(); err != nil {
						t.Errorf("event %d invalid: %v\n%s", seq, err, body)
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("event %d:\n got %+v\nwant %+v", seq, got, want)
					}
				}
			}
		})
	}
}

func TestGenerator_JobSubmitJSONIsTheSpec(t *testing.T) {
	s := testSpec(t, Config{Tier: TierGlobal, Batch: 1})
	if s.workload != WorkloadJobSubmit || s.path() != "/v1/jobs?durability=global" {
		t.Fatalf("workload %s path %s", s.workload, s.path())
	}
	g := s.generator(3)
	keys := map[string]bool{}
	for seq := range uint64(3) {
		body, n := g.next(time.Now())
		var got fsm.JobSpec
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil || n != 1 {
			t.Fatalf("decode %s: %v (events %d)", body, err, n)
		}
		if want := g.jobSpec(seq); !reflect.DeepEqual(got, want) {
			t.Fatalf("spec %d:\n got %+v\nwant %+v", seq, got, want)
		}
		if keys[got.IdempotencyKey] {
			t.Fatalf("idempotency key %q repeated", got.IdempotencyKey)
		}
		keys[got.IdempotencyKey] = true
		e := fsm.Event{ID: g.eventID(seq), Type: fsm.TypeJobCreated, JobID: g.jobIDOf(seq), Tenant: got.Tenant,
			Region: s.region, Node: benchNode, HLC: g.hlcAt(time.Now(), seq), Fence: 1,
			Body: &fsm.JobCreated{Spec: got, AssignedRegions: got.Regions}}
		if err := e.Validate(); err != nil {
			t.Fatalf("the spec does not make a valid JobCreated: %v", err)
		}
	}
}

func TestGenerator_EtcdPutIsBase64KeyAndValue(t *testing.T) {
	s := testSpec(t, Config{Target: TargetEtcd, PayloadBytes: 200})
	if s.path() != "/v3/kv/put" || s.bodyBytes != 200 {
		t.Fatalf("path %s body bytes %d", s.path(), s.bodyBytes)
	}
	g := s.generator(2)
	seen := map[string]bool{}
	for range 3 {
		body, _ := g.next(time.Now())
		var put struct {
			Key   []byte `json:"key"` // encoding/json reads base64 into []byte
			Value []byte `json:"value"`
		}
		if err := json.Unmarshal(body, &put); err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
		if len(put.Value) != 200 || !strings.HasPrefix(string(put.Key), etcdKeyPrefix+"/deadbeef/2/") {
			t.Fatalf("key %q, value of %d bytes", put.Key, len(put.Value))
		}
		if seen[string(put.Key)] {
			t.Fatalf("key %q repeated", put.Key)
		}
		seen[string(put.Key)] = true
	}
}

// TestNewSpec_PayloadSizesTheBody: the binary body is within a few bytes
// of the payload asked for, and sizes out of reach are refused by name.
func TestNewSpec_PayloadSizesTheBody(t *testing.T) {
	for _, tc := range []struct {
		cfg     Config
		payload int
		slack   int
	}{
		{Config{Tier: TierGlobal}, 200, 1},
		{Config{Tier: TierGlobal, Batch: 10}, 500, 1},
		{Config{Tier: TierRegional}, 200, 2}, // the name appears three times
	} {
		tc.cfg.PayloadBytes = tc.payload
		s := testSpec(t, tc.cfg)
		b, err := fsm.AppendBody(nil, s.generator(0).event(0).Body)
		if err != nil {
			t.Fatal(err)
		}
		if d := len(b) - tc.payload; d < -tc.slack || d > tc.slack || s.bodyBytes != len(b) {
			t.Errorf("%s payload %d: body %d bytes (reported %d)", s.workload, tc.payload, len(b), s.bodyBytes)
		}
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Tier: TierRegional, PayloadBytes: 5000}, "workflow-dispatched-events body is"},
		{Config{Tier: TierGlobal, PayloadBytes: 3}, "job-submit body is"},
	} {
		cfg := tc.cfg.withDefaults()
		_, err := newSpec(cfg, 1, time.Now())
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("payload %d: error %v, want one containing %q", cfg.PayloadBytes, err, tc.want)
		}
	}
}

func TestConfigValidate_NamesTheBadSetting(t *testing.T) {
	ok := Config{Addrs: []string{"127.0.0.1:8080"}}
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"no address", func(c *Config) { c.Addrs = nil }, "no address"},
		{"bad address", func(c *Config) { c.Addrs = []string{"ftp://x"} }, "ftp://x"},
		{"target", func(c *Config) { c.Target = "redis" }, `target "redis"`},
		{"tier", func(c *Config) { c.Tier = "zonal" }, `tier "zonal"`},
		{"clients", func(c *Config) { c.Clients = MaxClients + 1 }, "clients 4097"},
		{"batch", func(c *Config) { c.Batch = MaxBatch + 1 }, "batch 10001"},
		{"duration", func(c *Config) { c.Duration = 2 * MaxDuration }, "duration 2h0m0s"},
		{"durability", func(c *Config) { c.Durability = "strong" }, `durability "strong"`},
		{"regional cannot be global", func(c *Config) { c.Tier, c.Durability = TierRegional, DurabilityGlobal }, "never reach GLOBAL"},
		{"region", func(c *Config) { c.Region = "US-East" }, `region "US-East"`},
		{"tenant", func(c *Config) { c.Tenant = `a"b` }, `tenant "a\"b"`},
		{"etcd batch", func(c *Config) { c.Target, c.Batch = TargetEtcd, 5 }, "one key per request"},
		{"etcd durability", func(c *Config) { c.Target, c.Durability = TargetEtcd, "local" }, "etcd target has none"},
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.change(&c)
			err := c.Validate()
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestBaseURL(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:2379":         "http://127.0.0.1:2379",
		"http://127.0.0.1:2379/": "http://127.0.0.1:2379",
		"https://node:8443":      "https://node:8443",
	} {
		got, err := baseURL(in)
		if err != nil || got != want {
			t.Errorf("baseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
