// Package deploy holds no Go code: these tests check the files under
// deploy/ (Prometheus configuration and alert rules, the Grafana dashboard,
// the Dockerfile, the Kubernetes manifests) offline. Checks that need a
// tool (promtool) skip with a message when it is not installed.
package deploy

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// metricsFile lists the metric families deploy/ may read. cluster's
// TestMetrics_PeerIdsAreLabelsNotNames checks that real nodes serve every
// one of them, so an expression naming only these reads metrics that exist.
const metricsFile = "metrics.txt"

// prometheusOwn are series Prometheus itself makes for every target.
var prometheusOwn = []string{"up", "scrape_duration_seconds", "scrape_samples_scraped"}

// servedMetrics reads metricsFile.
func servedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(metricsFile)
	if err != nil {
		t.Fatalf("read %s: %v", metricsFile, err)
	}
	names := map[string]bool{}
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			names[line] = true
		}
	}
	return names
}

var (
	promqlString     = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promqlMatchers   = regexp.MustCompile(`\{[^{}]*\}`)
	promqlRange      = regexp.MustCompile(`\[[^\[\]]*\]`)
	grafanaVariable  = regexp.MustCompile(`\$\{[^}]*\}|\$\w+`)
	promqlLabelList  = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promqlIdentifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promqlFollowedBy = regexp.MustCompile(`^\s*\(`)
	promqlKeywords   = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset", "inf", "nan"}
)

// metricNames returns the metric names an expression selects: identifiers
// outside strings, label matchers, ranges and label lists that are not
// functions, aggregations or keywords. It is not a PromQL parser; promtool
// checks syntax (TestPrometheus_Promtool, TestGrafana_ExpressionsParse).
func metricNames(expr string) []string {
	s := promqlString.ReplaceAllString(expr, `""`)
	s = grafanaVariable.ReplaceAllString(s, "")
	s = promqlMatchers.ReplaceAllString(s, " ")
	s = promqlRange.ReplaceAllString(s, " ")
	s = promqlLabelList.ReplaceAllString(s, " ")
	var names []string
	for _, loc := range promqlIdentifier.FindAllStringIndex(s, -1) {
		id := s[loc[0]:loc[1]]
		if loc[0] > 0 && (isDigit(s[loc[0]-1]) || s[loc[0]-1] == '.') {
			continue // a number's exponent or a duration's unit: 1e3, 5m
		}
		if slices.Contains(promqlKeywords, strings.ToLower(id)) || promqlFollowedBy.MatchString(s[loc[1]:]) {
			continue
		}
		if !slices.Contains(names, id) {
			names = append(names, id)
		}
	}
	return names
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// familyOf maps a series name to the family it belongs to: a histogram's
// or summary's _bucket, _sum and _count series belong to the family
// without the suffix (when that family is served).
func familyOf(name string, served map[string]bool) string {
	if served[name] {
		return name
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && served[base] {
			return base
		}
	}
	return name
}

// checkExpr reports an expression that names no metric or a metric that
// is not served.
func checkExpr(t *testing.T, where, expr string, served map[string]bool) {
	t.Helper()
	names := metricNames(expr)
	if len(names) == 0 {
		t.Errorf("%s: no metric in %q", where, expr)
	}
	for _, n := range names {
		if !served[familyOf(n, served)] && !slices.Contains(prometheusOwn, n) {
			t.Errorf("%s: %s is not a metric Strata serves (%s): %q", where, n, metricsFile, expr)
		}
	}
}

func TestMetricNames(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want []string
	}{
		{"plain", `strata_raft_term`, []string{"strata_raft_term"}},
		{"matchers and range", `increase(strata_hlc_clock_skew_rejections_total{op=~"a|b"}[5m]) > 0`,
			[]string{"strata_hlc_clock_skew_rejections_total"}},
		{"aggregation and label list", `max by (group) (strata_raft_is_leader) == 0`, []string{"strata_raft_is_leader"}},
		{"histogram", `histogram_quantile(0.99, sum by (instance, le) (rate(strata_wal_fsync_duration_seconds_bucket[5m]))) > 0.05`,
			[]string{"strata_wal_fsync_duration_seconds_bucket"}},
		{"binary with on", `a_total / on (instance) group_left (region) b_bytes`, []string{"a_total", "b_bytes"}},
		{"grafana variables", `rate(x_total{region=~"$region"}[$__rate_interval]) or ${other}`, []string{"x_total"}},
		{"numbers", `y > 1e3 and z < 2.5`, []string{"y", "z"}},
		{"string label value naming a metric", `label_replace(up, "a", "strata_fake", "", "")`, []string{"up"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := metricNames(tt.expr); !slices.Equal(got, tt.want) {
				t.Errorf("metricNames(%q) = %v, want %v", tt.expr, got, tt.want)
			}
		})
	}
}
