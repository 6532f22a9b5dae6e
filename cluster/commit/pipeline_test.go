package commit

import (
	"errors"
	"testing"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
)

func repeat(o fsm.Outcome, n int) []fsm.Outcome {
	out := make([]fsm.Outcome, n)
	for i := range out {
		out[i] = o
	}
	return out
}

func TestPipeline_LocalAckIsFsyncedAndRegionalAckIsAppliedThenEverywhere(t *testing.T) {
	c := startPipeCluster(t, 3, 1, DurabilityRegional, group.ProposerConfig{})
	leader := c.leader()
	ctx := testkit.Ctx(t)

	localEvents, localJobs := testkit.JobEvents(0, 2)
	local, err := leader.pipe.Submit(ctx, localEvents, DurabilityLocal)
	if err != nil {
		t.Fatal(err)
	}
	if local.Level != DurabilityLocal || local.LSN == 0 || local.Index != 0 || local.Results != nil {
		t.Fatalf("LOCAL submit = %+v, want level LOCAL, an LSN, no index, no results", local)
	}
	if durable := leader.wal.LastLSN(); local.LSN > durable {
		t.Fatalf("LOCAL ack of LSN %d before it was durable (last durable %d)", local.LSN, durable)
	}

	regionalEvents, regionalJobs := testkit.JobEvents(2, 3)
	regional, err := leader.pipe.Submit(ctx, regionalEvents, DurabilityRegional)
	if err != nil {
		t.Fatal(err)
	}
	if regional.Level != DurabilityRegional || regional.Index == 0 || regional.LSN <= local.LSN {
		t.Fatalf("REGIONAL submit = %+v, want level REGIONAL, an index, LSN above %d", regional, local.LSN)
	}
	testkit.WantOutcomes(t, regional.Results, repeat(fsm.OutcomeApplied, 3)...)
	if applied := leader.Ledger.AppliedIndex(); applied < regional.Index {
		t.Fatalf("REGIONAL ack at index %d before the leader applied it (applied %d)", regional.Index, applied)
	}
	for _, id := range regionalJobs {
		if _, err := leader.Ledger.Job("acme", id); err != nil {
			t.Fatalf("REGIONAL-acked job %s not on the leader: %v", id, err)
		}
	}

	c.WaitConverged(append(localJobs, regionalJobs...))
	testkit.WaitUntil(t, "the REGIONAL watermark to cover both records", func() bool {
		return leader.wal.Watermarks().Regional >= regional.LSN
	})
	for _, level := range []string{"LOCAL", "REGIONAL"} {
		if n := testkit.MetricValue(t, leader.Reg, "strata_pipeline_ack_seconds", "level", level); n != 1 {
			t.Errorf("ack histogram for %s holds %v samples, want 1", level, n)
		}
	}
}

func TestPipeline_FollowerSubmitIsForwardedToTheLeaderAndApplied(t *testing.T) {
	c := startPipeCluster(t, 3, 2, DurabilityRegional, group.ProposerConfig{})
	leader := c.leader()
	follower := c.follower(leader)
	ctx := testkit.Ctx(t)

	events, jobs := testkit.JobEvents(0, 4)
	res, err := follower.pipe.Submit(ctx, events, DurabilityRegional)
	if err != nil {
		t.Fatal(err)
	}
	if res.Level != DurabilityRegional || res.Index == 0 {
		t.Fatalf("submit on follower = %+v, want REGIONAL with an index", res)
	}
	testkit.WantOutcomes(t, res.Results, repeat(fsm.OutcomeApplied, 4)...)
	if applied := leader.Ledger.AppliedIndex(); applied < res.Index {
		t.Fatalf("leader applied %d, below the acked index %d", applied, res.Index)
	}
	if n := testkit.MetricValue(t, follower.Reg, "strata_pipeline_forwarded_total"); n < 1 {
		t.Fatalf("forwarded %v batches, want ≥ 1", n)
	}
	c.WaitConverged(jobs)
	testkit.WaitUntil(t, "the follower's REGIONAL watermark", func() bool {
		return follower.wal.Watermarks().Regional >= res.LSN
	})

	// The follower's proposer names the leader, so a caller can forward.
	batch, err := fsm.EncodeBatch(events[:1])
	if err != nil {
		t.Fatal(err)
	}
	_, err = follower.Prop.Propose(ctx, batch)
	var nl *group.NotLeaderError
	if !errors.As(err, &nl) || !errors.Is(err, group.ErrNotLeader) {
		t.Fatalf("propose on follower: %v, want *NotLeaderError", err)
	}
	if nl.Leader.ID != leader.ID || nl.Leader.Addr != leader.Addr {
		t.Fatalf("NotLeaderError names %+v, want %s at %s", nl.Leader, leader.ID, leader.Addr)
	}
}

func TestPipeline_LevelAboveTierIsRejectedAndOffPathLevelsRoundUp(t *testing.T) {
	tiers := []struct {
		name   string
		tier   Durability
		subnet int
		want   map[Durability]Durability // requested -> acknowledged; 0: ErrAboveTier
	}{
		{name: "manager", tier: DurabilityRegional, subnet: 3, want: map[Durability]Durability{
			DurabilityNone: DurabilityNone, DurabilityLocal: DurabilityLocal,
			DurabilityRegional: DurabilityRegional, DurabilityGlobal: 0,
		}},
		{name: "gate", tier: DurabilityGlobal, subnet: 4, want: map[Durability]Durability{
			DurabilityNone: DurabilityNone, DurabilityLocal: DurabilityLocal,
			DurabilityRegional: DurabilityGlobal, DurabilityGlobal: DurabilityGlobal,
		}},
	}
	for _, tt := range tiers {
		t.Run(tt.name, func(t *testing.T) {
			c := startPipeCluster(t, 1, tt.subnet, tt.tier, group.ProposerConfig{})
			nd := c.nodes[0]
			ctx := testkit.Ctx(t)
			job := 0
			for level := DurabilityNone; level <= DurabilityGlobal; level++ {
				want := tt.want[level]
				before, applied := nd.wal.LastLSN(), nd.Ledger.AppliedIndex()
				res, err := nd.pipe.Submit(ctx, []fsm.Event{testkit.JobEvent(job)}, level)
				job++
				if want == 0 {
					var de *DurabilityError
					if !errors.As(err, &de) || !errors.Is(err, ErrAboveTier) || de.Tier != tt.tier {
						t.Fatalf("%s on %s: %v, want *DurabilityError", level, tt.tier, err)
					}
					if nd.wal.LastLSN() != before || nd.Ledger.AppliedIndex() != applied {
						t.Fatalf("%s on %s: rejected submit changed the NodeWAL or the ledger", level, tt.tier)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", level, err)
				}
				if res.Level != want {
					t.Fatalf("%s on %s acked at %s, want %s", level, tt.tier, res.Level, want)
				}
			}
			if _, err := nd.pipe.Submit(ctx, []fsm.Event{testkit.JobEvent(job)}, 0); !errors.Is(err, ErrInvalidDurability) {
				t.Fatalf("level 0: %v, want ErrInvalidDurability", err)
			}
			// NONE and LOCAL acks keep climbing to the tier.
			_, jobs := testkit.JobEvents(0, 4)
			if tt.tier == DurabilityRegional {
				jobs = jobs[:3]
			}
			c.WaitConverged(jobs)
		})
	}
}

func TestPipeline_AckLevelRules(t *testing.T) {
	tests := []struct {
		name        string
		level, tier Durability
		want        Durability
		wantErr     error
	}{
		{name: "none on manager", level: DurabilityNone, tier: DurabilityRegional, want: DurabilityNone},
		{name: "local on gate", level: DurabilityLocal, tier: DurabilityGlobal, want: DurabilityLocal},
		{name: "regional on manager", level: DurabilityRegional, tier: DurabilityRegional, want: DurabilityRegional},
		{name: "regional on gate rounds up", level: DurabilityRegional, tier: DurabilityGlobal, want: DurabilityGlobal},
		{name: "global on gate", level: DurabilityGlobal, tier: DurabilityGlobal, want: DurabilityGlobal},
		{name: "global on manager", level: DurabilityGlobal, tier: DurabilityRegional, wantErr: ErrAboveTier},
		{name: "zero level", level: 0, tier: DurabilityRegional, wantErr: ErrInvalidDurability},
		{name: "unknown level", level: 9, tier: DurabilityGlobal, wantErr: ErrInvalidDurability},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AckLevel(tt.level, tt.tier)
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Fatalf("AckLevel(%s, %s) = %s, %v; want %s, %v", tt.level, tt.tier, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestPipeline_ParseDurability(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Durability
	}{
		{name: "lower", in: "local", want: DurabilityLocal},
		{name: "upper", in: "GLOBAL", want: DurabilityGlobal},
		{name: "mixed", in: "Regional", want: DurabilityRegional},
		{name: "none", in: "none", want: DurabilityNone},
		{name: "unknown", in: "quorum", want: 0},
		{name: "empty", in: "", want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDurability(tt.in)
			if got != tt.want || (tt.want == 0) != errors.Is(err, ErrInvalidDurability) {
				t.Fatalf("ParseDurability(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
			}
			if tt.want != 0 && got.String() != tt.want.String() {
				t.Fatalf("String round trip: %s", got)
			}
		})
	}
}
