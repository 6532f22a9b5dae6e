package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const dashboardFile = "grafana/strata-dashboard.json"

type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID      int     `json:"id"`
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"` // a collapsed row's
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// allPanels flattens rows.
func (d dashboard) allPanels() []panel {
	var out []panel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("parse %s: %v", dashboardFile, err)
	}
	return d
}

// TestGrafana_DashboardReadsServedMetrics: every panel expression names
// only metrics Strata serves, every panel id is unique, and the dashboard
// has the sections issue 16 asks for.
func TestGrafana_DashboardReadsServedMetrics(t *testing.T) {
	served := servedMetrics(t)
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard needs a uid and a title")
	}
	ids := map[int]bool{}
	var rows []string
	exprs := 0
	for _, p := range d.allPanels() {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			rows = append(rows, p.Title)
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			checkExpr(t, fmt.Sprintf("panel %q %s", p.Title, tg.RefID), tg.Expr, served)
			exprs++
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok {
			// label_values(selector, label) is Grafana's, not PromQL.
			if s, _ := q["query"].(string); strings.HasPrefix(s, "label_values(") {
				sel, _, _ := strings.Cut(strings.TrimPrefix(s, "label_values("), ", ")
				checkExpr(t, "variable "+v.Name, sel, served)
			}
		}
	}
	t.Logf("%d panel expressions checked", exprs)
	for _, want := range []string{"Regions and groups", "Raft: leaders and terms", "Commit pipeline", "Forwarder", "NodeWAL", "HTTP API", "Go runtime"} {
		if !slices.ContainsFunc(rows, func(r string) bool { return strings.HasPrefix(r, want) }) {
			t.Errorf("no row %q (rows: %v)", want, rows)
		}
	}
}

// grafanaToPromQL replaces the dashboard's variables with values Prometheus
// accepts, so promtool can parse the expressions.
var grafanaToPromQL = strings.NewReplacer("$__rate_interval", "5m", "$region", ".*", "$role", ".*")

// TestGrafana_ExpressionsParse writes every panel expression into a rule
// file and has promtool check it: a syntax error in a panel fails here.
func TestGrafana_ExpressionsParse(t *testing.T) {
	pt := promtool(t)
	d := readDashboard(t)
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			rules = append(rules, rule{Record: fmt.Sprintf("dashboard:panel%d:%s", p.ID, strings.ToLower(tg.RefID)), Expr: grafanaToPromQL.Replace(tg.Expr)})
		}
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard.rules.yml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	runTool(t, ".", pt, "check", "rules", path)
}
