package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const (
	promConfig    = "prometheus/prometheus.yml"
	promRules     = "prometheus/rules/strata.rules.yml"
	promRulesTest = "prometheus/rules/strata.rules.test.yml"
)

// The alerts issue 16 asks for.
var requiredAlerts = []string{
	"StrataNoLeader", "StrataLeaderFlapping", "StrataForwarderBreakerOpen", "StrataNodeWALFsyncSlow",
	"StrataClockSkewRejections", "StrataAntiEntropyDivergence", "StrataDiskNearFull",
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
}

func TestPrometheus_RulesReadServedMetrics(t *testing.T) {
	served := servedMetrics(t)
	var rf ruleFile
	readYAML(t, promRules, &rf)
	var alerts []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			where := promRules + ": " + r.Alert + r.Record
			checkExpr(t, where, r.Expr, served)
			if r.Alert == "" {
				continue
			}
			alerts = append(alerts, r.Alert)
			if sev := r.Labels["severity"]; sev != "warning" && sev != "critical" {
				t.Errorf("%s: severity %q, want warning or critical", where, sev)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: needs a summary and a description", where)
			}
		}
	}
	for _, a := range requiredAlerts {
		if !slices.Contains(alerts, a) {
			t.Errorf("%s has no alert %s", promRules, a)
		}
	}
}

// TestPrometheus_RuleTestsCoverAlerts: promtool's unit tests exercise at
// least three of the required alerts.
func TestPrometheus_RuleTestsCoverAlerts(t *testing.T) {
	var rt struct {
		RuleFiles []string `yaml:"rule_files"`
		Tests     []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	readYAML(t, promRulesTest, &rt)
	if !slices.Equal(rt.RuleFiles, []string{filepath.Base(promRules)}) {
		t.Errorf("%s tests %v, want %s", promRulesTest, rt.RuleFiles, filepath.Base(promRules))
	}
	covered := map[string]bool{}
	for _, tc := range rt.Tests {
		for _, a := range tc.AlertRuleTest {
			covered[a.Alertname] = true
		}
	}
	n := 0
	for _, a := range requiredAlerts {
		if covered[a] {
			n++
		}
	}
	if n < 3 {
		t.Errorf("%s tests %d of the required alerts, want at least 3", promRulesTest, n)
	}
}

// TestPrometheus_ScrapeTargets: every job's file_sd file exists and labels
// each target with region, role and node, the labels the rules and the
// dashboard group by.
func TestPrometheus_ScrapeTargets(t *testing.T) {
	var cfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName     string `yaml:"job_name"`
			MetricsPath string `yaml:"metrics_path"`
			FileSD      []struct {
				Files []string `yaml:"files"`
			} `yaml:"file_sd_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, promConfig, &cfg)
	if !slices.Equal(cfg.RuleFiles, []string{"rules/strata.rules.yml"}) {
		t.Errorf("rule_files = %v", cfg.RuleFiles)
	}
	if len(cfg.ScrapeConfigs) == 0 {
		t.Fatal("no scrape_configs")
	}
	for _, sc := range cfg.ScrapeConfigs {
		if !strings.HasPrefix(sc.JobName, "strata") {
			t.Errorf("job %q: the rules select job=~\"strata.*\"", sc.JobName)
		}
		if sc.MetricsPath != "/metrics" {
			t.Errorf("job %s: metrics_path %q", sc.JobName, sc.MetricsPath)
		}
		for _, sd := range sc.FileSD {
			for _, f := range sd.Files {
				var groups []struct {
					Targets []string          `yaml:"targets"`
					Labels  map[string]string `yaml:"labels"`
				}
				readYAML(t, filepath.Join("prometheus", f), &groups)
				if len(groups) == 0 {
					t.Errorf("job %s: %s has no targets", sc.JobName, f)
				}
				for _, g := range groups {
					role := g.Labels["role"]
					if g.Labels["region"] == "" || g.Labels["node"] == "" || (role != "gate" && role != "manager") {
						t.Errorf("job %s: %s: targets %v labelled %v, want region, node and role gate|manager", sc.JobName, f, g.Targets, g.Labels)
					}
					for _, target := range g.Targets {
						if !strings.HasSuffix(target, ":7100") {
							t.Errorf("job %s: target %s is not an API address (port 7100)", sc.JobName, target)
						}
					}
				}
			}
		}
	}
}

// promtool returns the path of promtool or skips the test.
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian: apt-get install prometheus); skipping this promtool check")
	}
	return path
}

func runTool(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s %s (in %s): %v\n%s", filepath.Base(name), strings.Join(args, " "), dir, err, out)
	}
}

// TestPrometheus_Promtool runs what `make promtool-check` runs.
func TestPrometheus_Promtool(t *testing.T) {
	pt := promtool(t)
	runTool(t, "prometheus", pt, "check", "config", "prometheus.yml")
	runTool(t, "prometheus", pt, "check", "rules", "rules/strata.rules.yml")
	runTool(t, "prometheus/rules", pt, "test", "rules", "strata.rules.test.yml")
}
