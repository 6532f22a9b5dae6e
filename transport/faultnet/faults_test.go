package faultnet

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func newFaults(t *testing.T, cfg Config) *Faults {
	t.Helper()
	f, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return f
}

func TestFaults_RulesFollowCalls(t *testing.T) {
	tests := []struct {
		name  string
		apply func(f *Faults) error
		want  Rules
	}{
		{
			name:  "no rules",
			apply: func(*Faults) error { return nil },
			want:  Rules{Peers: []PeerRule{}},
		},
		{
			name:  "partition names the host of an address",
			apply: func(f *Faults) error { f.Partition("127.0.0.2:7000"); return nil },
			want:  Rules{Peers: []PeerRule{{Peer: "127.0.0.2", Partitioned: true}}},
		},
		{
			name: "delay and partition of one peer combine, peers sorted",
			apply: func(f *Faults) error {
				f.Partition("127.0.0.3")
				if err := f.DelayWithJitter("127.0.0.2", 30*time.Millisecond, 5*time.Millisecond); err != nil {
					return err
				}
				return f.Delay("127.0.0.3", time.Second)
			},
			want: Rules{Peers: []PeerRule{
				{Peer: "127.0.0.2", Delay: Duration(30 * time.Millisecond), Jitter: Duration(5 * time.Millisecond)},
				{Peer: "127.0.0.3", Partitioned: true, Delay: Duration(time.Second)},
			}},
		},
		{
			name: "heal clears every rule of one peer",
			apply: func(f *Faults) error {
				f.Partition("127.0.0.2")
				f.Partition("127.0.0.3")
				if err := f.Delay("127.0.0.2", time.Second); err != nil {
					return err
				}
				f.Heal("127.0.0.2")
				return nil
			},
			want: Rules{Peers: []PeerRule{{Peer: "127.0.0.3", Partitioned: true}}},
		},
		{
			name: "heal all keeps the wan latency",
			apply: func(f *Faults) error {
				f.Partition("127.0.0.2")
				if err := f.SetWANLatency(50 * time.Millisecond); err != nil {
					return err
				}
				f.HealAll()
				return nil
			},
			want: Rules{WANLatency: Duration(50 * time.Millisecond), Peers: []PeerRule{}},
		},
		{
			name: "zero delay removes the rule",
			apply: func(f *Faults) error {
				if err := f.Delay("127.0.0.2", time.Second); err != nil {
					return err
				}
				return f.Delay("127.0.0.2", 0)
			},
			want: Rules{Peers: []PeerRule{}},
		},
		{
			name: "replace swaps everything",
			apply: func(f *Faults) error {
				f.Partition("127.0.0.9")
				return f.Replace(Rules{WANLatency: Duration(time.Millisecond), Peers: []PeerRule{
					{Peer: "127.0.0.2:1", Delay: Duration(time.Second)},
					{Peer: "127.0.0.4"}, // healthy: dropped
				}})
			},
			want: Rules{WANLatency: Duration(time.Millisecond), Peers: []PeerRule{{Peer: "127.0.0.2", Delay: Duration(time.Second)}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFaults(t, Config{})
			if err := tt.apply(f); err != nil {
				t.Fatalf("apply: %v", err)
			}
			if got := f.Rules(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Rules() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestFaults_InvalidRulesAreRejectedAndChangeNothing(t *testing.T) {
	tests := []struct {
		name  string
		apply func(f *Faults) error
	}{
		{"negative delay", func(f *Faults) error { return f.Delay("a", -time.Second) }},
		{"delay above MaxDelay", func(f *Faults) error { return f.Delay("a", MaxDelay+1) }},
		{"jitter above MaxDelay", func(f *Faults) error { return f.DelayWithJitter("a", 0, MaxDelay+1) }},
		{"wan latency negative", func(f *Faults) error { return f.SetWANLatency(-1) }},
		{"replace with unnamed peer", func(f *Faults) error {
			return f.Replace(Rules{Peers: []PeerRule{{Partitioned: true}}})
		}},
		{"replace with a peer twice", func(f *Faults) error {
			return f.Replace(Rules{Peers: []PeerRule{{Peer: "a:1", Partitioned: true}, {Peer: "a:2"}}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFaults(t, Config{})
			f.Partition("keep")
			before := f.Rules()
			if err := tt.apply(f); !errors.Is(err, ErrInvalidRule) {
				t.Fatalf("err = %v, want ErrInvalidRule", err)
			}
			if got := f.Rules(); !reflect.DeepEqual(got, before) {
				t.Errorf("rules changed to %+v, want %+v", got, before)
			}
		})
	}
}

func TestConfig_ValidateRejectsOutOfRange(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want error
	}{
		{"zero value", Config{}, nil},
		{"wan latency above MaxDelay", Config{WANLatency: MaxDelay + 1}, ErrInvalidConfig},
		{"negative queue bound", Config{MaxQueuedBytesPerConn: -1}, ErrInvalidConfig},
		{"negative packet bound", Config{MaxDelayedPackets: -1}, ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); !errors.Is(err, tt.want) {
				t.Errorf("New: err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestRules_JSONRoundTrip(t *testing.T) {
	f := newFaults(t, Config{WANLatency: 50 * time.Millisecond})
	f.Partition("127.0.0.3")
	if err := f.DelayWithJitter("127.0.0.2", 30*time.Millisecond, 2*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(f.Rules())
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"wan_latency":"50ms","peers":[` +
		`{"peer":"127.0.0.2","partitioned":false,"delay":"30ms","jitter":"2ms"},` +
		`{"peer":"127.0.0.3","partitioned":true,"delay":"0s","jitter":"0s"}]}`
	if string(b) != want {
		t.Fatalf("json = %s\nwant   %s", b, want)
	}
	var back Rules
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, f.Rules()) {
		t.Errorf("round trip = %+v, want %+v", back, f.Rules())
	}
}

func TestDuration_UnmarshalAcceptsStringOrNanoseconds(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Duration
		wantErr bool
	}{
		{"string", `"1.5s"`, Duration(1500 * time.Millisecond), false},
		{"nanoseconds", `1000`, Duration(time.Microsecond), false},
		{"bad string", `"fast"`, 0, true},
		{"object", `{}`, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Duration
			err := json.Unmarshal([]byte(tt.in), &d)
			if (err != nil) != tt.wantErr || d != tt.want {
				t.Errorf("got %v, err %v; want %v, err %v", d, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestNextDelay_AddsJitterAndWANLatencyToRemotePeersOnly(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	regions := map[string]string{"10.0.0.1": "use1", "10.0.0.2": "euw1"}
	f := newFaults(t, Config{
		Seed:        seed,
		LocalRegion: "use1",
		RegionOf:    func(peer string) string { return regions[peer] },
		WANLatency:  50 * time.Millisecond,
	})
	if err := f.DelayWithJitter("10.0.0.2", 10*time.Millisecond, 5*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		peer     string
		min, max time.Duration // want min <= delay < max (max exclusive), or == min when max is 0
	}{
		{"same region", "10.0.0.1", 0, 0},
		{"unknown region", "10.0.0.9", 0, 0},
		{"remote with delay and jitter", "10.0.0.2", 60 * time.Millisecond, 65 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 100 {
				d := f.nextDelay(tt.peer)
				if tt.max == 0 && d != tt.min || tt.max != 0 && (d < tt.min || d >= tt.max) {
					t.Fatalf("nextDelay(%s) = %v, want in [%v, %v)", tt.peer, d, tt.min, tt.max)
				}
			}
		})
	}
}

func TestSendPacket_DropsDelaysAndBounds(t *testing.T) {
	f := newFaults(t, Config{MaxDelayedPackets: 1})
	sent := make(chan string, 4)
	send := func(b []byte) error { sent <- string(b); return nil }

	// No rule: sent at once, synchronously.
	if err := f.SendPacket("127.0.0.2:1", []byte("now"), send); err != nil || len(sent) != 1 || <-sent != "now" {
		t.Fatalf("healthy peer: err %v, want the packet sent at once", err)
	}

	// Partitioned: dropped silently, inbound too.
	f.Partition("127.0.0.2")
	if err := f.SendPacket("127.0.0.2:1", []byte("lost"), send); err != nil || len(sent) != 0 {
		t.Fatalf("partitioned peer: err %v, sent %d; want dropped", err, len(sent))
	}
	if f.AcceptPacket("127.0.0.2:9") {
		t.Fatal("AcceptPacket from a partitioned peer = true")
	}
	f.HealAll()
	if !f.AcceptPacket("127.0.0.2:9") {
		t.Fatal("AcceptPacket after heal = false")
	}

	// Delayed: arrives later, a copy of the caller's buffer.
	if err := f.Delay("127.0.0.2", 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	buf := []byte("late")
	start := time.Now()
	if err := f.SendPacket("127.0.0.2:1", buf, send); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXX")
	// Bound of one: a second packet while the first waits is dropped.
	if err := f.SendPacket("127.0.0.2:1", []byte("over"), send); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-sent:
		if got != "late" {
			t.Fatalf("delayed packet = %q, want %q", got, "late")
		}
		if el := time.Since(start); el < 20*time.Millisecond {
			t.Fatalf("delayed packet after %v, want >= 20ms", el)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("delayed packet never sent")
	}
	if len(sent) != 0 {
		t.Fatalf("packet over the bound was sent: %q", <-sent)
	}
}

func TestMetrics_CountDroppedTrafficAndRegisterOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := newFaults(t, Config{Registerer: reg})
	f.Partition("127.0.0.2")
	for range 3 {
		if err := f.SendPacket("127.0.0.2:1", []byte("x"), func([]byte) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range families {
		got[mf.GetName()] = mf.GetMetric()[0].GetCounter().GetValue()
	}
	want := map[string]float64{
		"strata_transport_faults_dropped_packets_total": 3,
		"strata_transport_faults_cut_connections_total": 0,
		"strata_transport_faults_refused_dials_total":   0,
		"strata_transport_faults_delayed_writes_total":  0,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("counters = %v, want %v", got, want)
	}
	if _, err := New(Config{Registerer: reg}); err == nil {
		t.Error("second New on the same registry succeeded, want a registration error")
	}
}
