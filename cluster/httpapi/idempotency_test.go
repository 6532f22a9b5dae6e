package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
)

func TestIdempotencyCache_ClaimSettleForget(t *testing.T) {
	c := newIdempotencyCache(2)
	spec := &fsm.JobSpec{Tenant: "acme", IdempotencyKey: "k"}
	a, b, d := idempotentEventID("acme", "a"), idempotentEventID("acme", "b"), idempotentEventID("acme", "d")
	if _, fresh := c.claim(a, idemEntry{jobID: "j1", spec: spec, level: commit.DurabilityGlobal}); !fresh {
		t.Fatal("first claim not fresh")
	}
	prev, fresh := c.claim(a, idemEntry{jobID: "j2"})
	if fresh || prev.jobID != "j1" || prev.level != 0 {
		t.Fatalf("second claim: fresh %v, %+v (want j1, in flight)", fresh, prev)
	}
	c.settle(a, commit.DurabilityLocal)
	if prev, _ := c.claim(a, idemEntry{}); prev.level != commit.DurabilityLocal {
		t.Fatalf("settled level %s, want LOCAL", prev.level)
	}
	// A submit that failed before the NodeWAL leaves no trace.
	c.claim(b, idemEntry{jobID: "j3"})
	c.settle(b, commit.DurabilityNone)
	if _, fresh := c.claim(b, idemEntry{jobID: "j4"}); !fresh {
		t.Fatal("a key whose submit failed before LOCAL is still claimed")
	}
	// FIFO bound: a third key evicts the oldest.
	c.claim(d, idemEntry{jobID: "j5"})
	if _, fresh := c.claim(a, idemEntry{}); !fresh {
		t.Fatal("the oldest key was not evicted")
	}
}

// A key forgotten after a failed submit and claimed again stays claimed
// while in flight: the forgotten claim must not evict the new one.
func TestIdempotencyCache_ForgottenClaimDoesNotEvictTheNextOne(t *testing.T) {
	c := newIdempotencyCache(2)
	b, x := idempotentEventID("acme", "b"), idempotentEventID("acme", "x")
	c.claim(b, idemEntry{jobID: "j1"})
	c.settle(b, commit.DurabilityNone)
	if _, fresh := c.claim(b, idemEntry{jobID: "j2"}); !fresh {
		t.Fatal("a forgotten key is still claimed")
	}
	c.claim(x, idemEntry{jobID: "j3"})
	if prev, fresh := c.claim(b, idemEntry{jobID: "j4"}); fresh || prev.jobID != "j2" {
		t.Fatalf("repeat of an in-flight key: fresh %v, %+v (want j2 in flight)", fresh, prev)
	}
	// Many forgotten claims do not grow the order without bound.
	for i := range 100 {
		k := idempotentEventID("acme", fmt.Sprint("f", i))
		c.claim(k, idemEntry{})
		c.settle(k, commit.DurabilityNone)
	}
	if len(c.order) > 2*c.max+1 {
		t.Fatalf("order holds %d claims for a cache of %d", len(c.order), c.max)
	}
}

func TestReplayed(t *testing.T) {
	spec := &fsm.JobSpec{Tenant: "acme", IdempotencyKey: "k", Regions: []string{"use1"}}
	other := &fsm.JobSpec{Tenant: "acme", IdempotencyKey: "k", Regions: []string{"euw1"}}
	tests := []struct {
		name   string
		prev   idemEntry
		got    *fsm.JobSpec
		status int
	}{
		{"same body, settled", idemEntry{jobID: "j", spec: spec, level: commit.DurabilityLocal}, spec, http.StatusOK},
		{"same body, in flight", idemEntry{jobID: "j", spec: spec}, spec, http.StatusConflict},
		{"other body", idemEntry{jobID: "j", spec: spec, level: commit.DurabilityGlobal}, other, http.StatusConflict},
	}
	for _, tt := range tests {
		out, err := replayed(tt.prev, tt.got)
		status := http.StatusOK
		var ae *httpx.APIError
		if errors.As(err, &ae) {
			status = ae.Status
		}
		if status != tt.status || (err == nil) != (out.Existing && out.JobID == "j" && out.Level == tt.prev.level) {
			t.Errorf("%s: %+v, %v; want status %d", tt.name, out, err, tt.status)
		}
	}
}

// A repeat asking for more than the cached submit reached is not answered
// from the cache: that submit may yet lose to another gate's.
func TestReplayedAt_BelowTheAskedLevelIsRetry(t *testing.T) {
	spec := &fsm.JobSpec{Tenant: "acme", IdempotencyKey: "k", Regions: []string{"use1"}}
	local := idemEntry{jobID: "j", spec: spec, level: commit.DurabilityLocal}
	global := idemEntry{jobID: "j", spec: spec, level: commit.DurabilityGlobal}
	tests := []struct {
		name   string
		prev   idemEntry
		want   commit.Durability
		status int
	}{
		{"LOCAL asked, LOCAL reached", local, commit.DurabilityLocal, http.StatusOK},
		{"GLOBAL asked, LOCAL reached", local, commit.DurabilityGlobal, http.StatusConflict},
		{"GLOBAL asked, GLOBAL reached", global, commit.DurabilityGlobal, http.StatusOK},
		{"LOCAL asked, GLOBAL reached", global, commit.DurabilityLocal, http.StatusOK},
		{"in flight", idemEntry{jobID: "j", spec: spec}, commit.DurabilityLocal, http.StatusConflict},
	}
	for _, tt := range tests {
		out, err := replayedAt(tt.prev, spec, tt.want)
		status := http.StatusOK
		var ae *httpx.APIError
		if errors.As(err, &ae) {
			status = ae.Status
		}
		if status != tt.status || (err == nil) != (out.Existing && out.JobID == "j") {
			t.Errorf("%s: %+v, %v; want status %d", tt.name, out, err, tt.status)
		}
	}
}
