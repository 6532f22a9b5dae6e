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

// TestPrometheus_RuleTestsCoverAlerts: promtool's unit tests exercise
// every required alert.
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
	for _, a := range requiredAlerts {
		if !covered[a] {
			t.Errorf("%s has no alert_rule_test of %s", promRulesTest, a)
		}
	}
}

// composeCA is where `make compose-up` (compose/compose.sh gen) writes the
// compose cluster's CA, relative to deploy/.
var composeCA = filepath.Join("compose", ".secrets", "ca.pem")

// jobSchemes is how each job's cluster serves: `strata dev` in clear (its
// default), the compose cluster TLS only (a plain request gets 400).
var jobSchemes = map[string]string{"strata-dev": "http", "strata-compose": "https"}

// TestPrometheus_ScrapeTargets: every job's file_sd file exists and labels
// each target with region, role and node, the labels the rules and the
// dashboard group by; a job scrapes its cluster with the scheme it serves,
// and an https job verifies the nodes against the cluster's CA.
func TestPrometheus_ScrapeTargets(t *testing.T) {
	var cfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName     string `yaml:"job_name"`
			MetricsPath string `yaml:"metrics_path"`
			Scheme      string `yaml:"scheme"`
			TLSConfig   *struct {
				CAFile             string `yaml:"ca_file"`
				InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
			} `yaml:"tls_config"`
			FileSD []struct {
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
		scheme := sc.Scheme
		if scheme == "" {
			scheme = "http" // Prometheus's default
		}
		switch want, ok := jobSchemes[sc.JobName]; {
		case !ok:
			t.Errorf("job %s: not in jobSchemes: say whether its cluster serves http or https", sc.JobName)
		case scheme != want:
			t.Errorf("job %s: scheme %s, want %s (the scheme its cluster serves)", sc.JobName, scheme, want)
		}
		if scheme == "https" && (sc.TLSConfig == nil || sc.TLSConfig.CAFile == "" || sc.TLSConfig.InsecureSkipVerify) {
			t.Errorf("job %s: https needs tls_config.ca_file (the cluster's CA) and verification on", sc.JobName)
		}
		if sc.JobName == "strata-compose" && sc.TLSConfig != nil {
			// Relative to prometheus.yml.
			if ca := filepath.Join("prometheus", sc.TLSConfig.CAFile); ca != composeCA {
				t.Errorf("job %s: ca_file %s is %s from deploy/, want %s (where compose.sh writes the CA)", sc.JobName, sc.TLSConfig.CAFile, ca, composeCA)
			}
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

// TestPrometheus_ComposeCALandsWhereTheJobReadsIt: compose.sh writes the CA
// to composeCA and the nodes trust that file, so the strata-compose job's
// ca_file is the cluster's CA.
func TestPrometheus_ComposeCALandsWhereTheJobReadsIt(t *testing.T) {
	sh, err := os.ReadFile(filepath.Join("compose", "compose.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`secrets="$here/.secrets"`, `tls ca create -o "$secrets"`} {
		if !strings.Contains(string(sh), want) {
			t.Errorf("compose/compose.sh no longer has %s: where does the CA land? (composeCA is %s)", want, composeCA)
		}
	}
	dc, err := os.ReadFile(filepath.Join("compose", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dc), "./.secrets/ca.pem:/etc/strata/tls/ca.pem") {
		t.Errorf("compose/docker-compose.yml does not give the nodes ./.secrets/ca.pem as their CA")
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
