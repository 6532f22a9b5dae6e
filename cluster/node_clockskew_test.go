package cluster

import (
	"net/http"
	"testing"
	"time"
)

// subnetClockSkew: 127.0.118.x.
const subnetClockSkew = 118

// The clock-skew fault (faultnet.Rules.ClockOffset) reaches the node's HLC:
// PUT /v1/debug/faults on one node moves that node's timestamps, and no
// other node's.
func TestNode_ClockOffsetFaultShiftsThatNodesHLC(t *testing.T) {
	c := startTestCluster(t, subnetClockSkew)
	const offset = 3 * time.Second
	if r := c.call("g2", "PUT", "/v1/debug/faults", testAdminToken, []byte(`{"wan_latency":"0s","peers":[],"clock_offset":"3s"}`)); r.status != http.StatusOK {
		t.Fatalf("PUT faults: %d %s", r.status, r.body)
	}
	now := time.Now().UnixMilli()
	skewed, err := c.node("g2").clock.Now()
	if err != nil {
		t.Fatal(err)
	}
	other, err := c.node("g1").clock.Now()
	if err != nil {
		t.Fatal(err)
	}
	if skewed.WallMs < now+offset.Milliseconds()-100 {
		t.Fatalf("g2's HLC at %d, want at least %d (now %d + 3s)", skewed.WallMs, now+offset.Milliseconds()-100, now)
	}
	if other.WallMs >= now+offset.Milliseconds()-100 {
		t.Fatalf("g1's HLC at %d moved with g2's fault (now %d)", other.WallMs, now)
	}
	// Healing the rules clears the offset (the HLC itself never goes back).
	if r := c.call("g2", "PUT", "/v1/debug/faults", testAdminToken, []byte(`{"wan_latency":"0s","peers":[]}`)); r.status != http.StatusOK {
		t.Fatalf("PUT faults: %d %s", r.status, r.body)
	}
	if got := c.node("g2").Faults().Clock().Offset(); got != 0 {
		t.Fatalf("offset %v after the heal, want 0", got)
	}
}
