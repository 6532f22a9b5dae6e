package chaos

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestSchedule_SameSeedSameFaults(t *testing.T) {
	cfg := ScheduleConfig{Seed: 42, Duration: 10 * time.Minute, Kinds: Kinds, Nodes: []string{"b", "a", "c"}}
	a, err := Schedule(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Nodes = []string{"c", "b", "a"} // order does not matter
	b, _ := Schedule(cfg)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("one seed gave two schedules")
	}
	cfg.Seed = 43
	if c, _ := Schedule(cfg); reflect.DeepEqual(a, c) {
		t.Fatal("seeds 42 and 43 gave the same schedule")
	}
}

func TestSchedule_FaultsAreSequentialBoundedAndOfTheKindsAsked(t *testing.T) {
	for seed := range uint64(50) {
		cfg := ScheduleConfig{Seed: seed, Duration: 3 * time.Minute, Kinds: []Kind{Pause, Skew}, Nodes: []string{"n1", "n2"}}
		fs, err := Schedule(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) < 5 {
			t.Fatalf("seed %d: %d faults in 3 minutes", seed, len(fs))
		}
		var end time.Duration
		for _, f := range fs {
			if f.At < end+DefaultMinGap || f.Hold < DefaultMinHold || f.Hold > DefaultMaxHold || f.At+f.Hold > cfg.Duration {
				t.Fatalf("seed %d: fault %v overlaps or overruns (previous ended at %v)", seed, f, end)
			}
			if f.Kind != Pause && f.Kind != Skew {
				t.Fatalf("seed %d: fault of kind %s", seed, f.Kind)
			}
			if f.Kind == Skew && (f.Offset == 0 || f.Offset > MaxSkew || f.Offset < -MaxSkew) {
				t.Fatalf("seed %d: skew %v", seed, f.Offset)
			}
			end = f.At + f.Hold
		}
	}
}

func TestSchedule_RefusesBadConfig(t *testing.T) {
	for _, cfg := range []ScheduleConfig{
		{Duration: 0, Kinds: Kinds, Nodes: []string{"a"}},
		{Duration: MaxDuration + time.Second, Kinds: Kinds, Nodes: []string{"a"}},
		{Duration: time.Minute, Nodes: []string{"a"}},
		{Duration: time.Minute, Kinds: Kinds},
		{Duration: time.Minute, Kinds: Kinds, Nodes: []string{"a"}, MinHold: 5 * time.Second, MaxHold: time.Second},
	} {
		if _, err := Schedule(cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("Schedule(%+v) = %v, want ErrBadConfig", cfg, err)
		}
	}
}

func TestParseKinds(t *testing.T) {
	got, err := ParseKinds("kill, skew,kill")
	if err != nil || !reflect.DeepEqual(got, []Kind{Kill, Skew}) {
		t.Fatalf("ParseKinds = %v, %v", got, err)
	}
	for _, bad := range []string{"", ",", "kill,flood"} {
		if _, err := ParseKinds(bad); !errors.Is(err, ErrBadConfig) {
			t.Errorf("ParseKinds(%q) = %v", bad, err)
		}
	}
}
