package cluster

import (
	"bufio"
	"bytes"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// deployMetricsFile lists the metric families deploy/ (Prometheus alerts,
// Grafana dashboard) reads; deploy's own tests check every PromQL
// expression against it, and TestMetrics_PeerIdsAreLabelsNotNames checks it
// against real nodes.
var deployMetricsFile = filepath.Join("..", "deploy", "metrics.txt")

// scrapeFamilies reads one node's /metrics and returns its metric family
// names (from the # TYPE lines) and the raw text.
func scrapeFamilies(c *testCluster, id string) (map[string]bool, string) {
	c.t.Helper()
	r := c.call(id, "GET", "/metrics", "", nil)
	if r.status != http.StatusOK {
		c.t.Fatalf("GET /metrics on %s: %d %s", id, r.status, r.body)
	}
	names := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			names[f[2]] = true
		}
	}
	if err := sc.Err(); err != nil {
		c.t.Fatalf("read /metrics of %s: %v", id, err)
	}
	return names, string(r.body)
}

// readDeployMetrics returns the names listed in deploy/metrics.txt.
func readDeployMetrics(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(deployMetricsFile)
	if err != nil {
		t.Fatalf("read %s: %v", deployMetricsFile, err)
	}
	var names []string
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			names = append(names, line)
		}
	}
	return names
}

// TestMetrics_PeerIdsAreLabelsNotNames runs a cluster whose node ids look
// like a deployment's (use1-g1 ...), lets the leaders replicate, and scrapes
// every node: no metric family is named after a peer, raft's replication
// metrics carry the peer as a label, and the deploy/ families are served.
func TestMetrics_PeerIdsAreLabelsNotNames(t *testing.T) {
	c := startTestCluster(t, 113, func(cfg *NodeConfig) { cfg.NodeID = "use1-" + cfg.NodeID })
	var ids, sanitized []string
	for _, cfg := range c.cfgs {
		ids = append(ids, cfg.NodeID)
		sanitized = append(sanitized, strings.NewReplacer("-", "_", ".", "_").Replace(cfg.NodeID))
	}
	// A write makes the leaders append and replicate, not only heartbeat.
	if r := c.submitJob(ids[0], "", ""); r.status != http.StatusCreated && r.status != http.StatusOK {
		t.Fatalf("submit: %d %s", r.status, r.body)
	}

	want := readDeployMetrics(t)
	var union map[string]bool
	var texts map[string]string
	var missing []string
	// Raft's summaries appear with their first sample; the families deploy/
	// reads appear once the nodes have served, replicated and applied.
	deadline := time.Now().Add(nodeTestWait)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		union, texts, missing = map[string]bool{}, map[string]string{}, nil
		for _, id := range ids {
			names, text := scrapeFamilies(c, id)
			for n := range names {
				union[n] = true
			}
			texts[id] = text
		}
		for _, n := range want {
			if !union[n] {
				missing = append(missing, n)
			}
		}
		if !union["strata_raft_replication_heartbeat"] {
			missing = append(missing, "strata_raft_replication_heartbeat")
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, no node serves these families of %s: %v", nodeTestWait, deployMetricsFile, missing)
		}
		<-tick.C
	}

	for name := range union {
		for _, id := range sanitized {
			if strings.Contains(name+"_", "_"+id+"_") {
				t.Errorf("metric family %q is named after peer %s", name, id)
			}
		}
	}
	if !strings.Contains(strings.Join(slices.Collect(maps.Values(texts)), "\n"), `strata_raft_replication_heartbeat_count{peer="use1-`) {
		t.Errorf(`no node serves strata_raft_replication_heartbeat{peer="use1-..."}`)
	}
	for id, text := range texts {
		if strings.Contains(text, `peer_id="`) {
			t.Errorf("%s still serves raft's peer_id label", id)
		}
	}
	for _, n := range []string{"strata_hlc_ticks_total", "strata_hlc_physical_offset_seconds", "strata_raft_is_leader",
		"strata_raft_has_leader", "strata_raft_term", "strata_data_dir_available_bytes"} {
		if !union[n] {
			t.Errorf("%s is not served", n)
		}
	}
}

// TestMetrics_DeployListNamesFamilies is a guard on deploy/metrics.txt
// itself: a name there must look like a family (no suffix of a histogram's
// series), so that deploy's expression check and the scrape above agree.
func TestMetrics_DeployListNamesFamilies(t *testing.T) {
	names := readDeployMetrics(t)
	if len(names) == 0 {
		t.Fatalf("%s lists no metric", deployMetricsFile)
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("%s listed twice", n)
		}
		seen[n] = true
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if strings.HasSuffix(n, suffix) && !strings.HasSuffix(n, "_total") {
				t.Errorf("%s: list the family, not its %s series", n, suffix)
			}
		}
	}
}
