package chaos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// skewRejectionsMetric counts the remote HLC timestamps a node refused
// for being more than max_offset ahead: what a skew fault should cause.
const skewRejectionsMetric = "strata_hlc_clock_skew_rejections_total"

// maxMetricsBytes bounds what scrapeCounter reads of a /metrics page.
const maxMetricsBytes = 8 << 20

// scrapeCounter reads an unlabelled counter from a node's /metrics (a
// public route).
func scrapeCounter(ctx context.Context, hc *http.Client, apiAddr, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+apiAddr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s/metrics: %s", apiAddr, resp.Status)
	}
	return parseCounter(io.LimitReader(resp.Body, maxMetricsBytes), name)
}

// parseCounter finds `name value` in a Prometheus text page.
func parseCounter(r io.Reader, name string) (float64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(rest), 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("metric %s not found", name)
}

// skewRejections sums the counter over the nodes, less what each node
// had counted at the start (a node restarted since starts from 0, so the
// sum is a lower bound).
func (r *runner) skewRejections(ctx context.Context, baseline map[string]float64) int {
	hc := &http.Client{Timeout: r.cfg.CallTimeout}
	total := 0.0
	for _, n := range r.cfg.Cluster.Nodes {
		v, err := scrapeCounter(ctx, hc, n.APIAddr, skewRejectionsMetric)
		if err != nil {
			continue
		}
		if b := baseline[n.NodeID]; v >= b {
			v -= b
		}
		total += v
	}
	return int(total)
}

// skewBaseline reads every node's counter before the run.
func (r *runner) skewBaseline(ctx context.Context) map[string]float64 {
	hc := &http.Client{Timeout: r.cfg.CallTimeout}
	out := map[string]float64{}
	for _, n := range r.cfg.Cluster.Nodes {
		if v, err := scrapeCounter(ctx, hc, n.APIAddr, skewRejectionsMetric); err == nil {
			out[n.NodeID] = v
		}
	}
	return out
}
