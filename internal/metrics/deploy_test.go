package metrics_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/chimesched/chime/internal/metrics"
)

// TestDeployFilesNameOnlyRealMetrics: the example Prometheus rules and the
// Grafana dashboard under deploy/ name only metrics chime exports, so a
// renamed metric cannot leave them silently empty.
func TestDeployFilesNameOnlyRealMetrics(t *testing.T) {
	t.Parallel()
	names := metrics.Names()
	if len(names) < 10 {
		t.Fatalf("metrics.Names: %v", names)
	}
	known := func(m string) bool {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(m, suffix); ok && slices.Contains(names, base) {
				return true
			}
		}
		return false
	}
	metric := regexp.MustCompile(`\bchime_[a-z0-9_]+`)
	check := func(file string, exprs []string) {
		if len(exprs) == 0 {
			t.Fatalf("%s: no expressions found", file)
		}
		seen := 0
		for _, e := range exprs {
			for _, m := range metric.FindAllString(e, -1) {
				seen++
				if !known(m) {
					t.Errorf("%s names %s, which chime does not export (known: %v)", file, m, names)
				}
			}
		}
		if seen == 0 {
			t.Errorf("%s names no chime metric", file)
		}
	}

	raw, err := os.ReadFile("../../deploy/prometheus/chime-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	check("chime-alerts.yml", exprs)

	raw, err = os.ReadFile("../../deploy/grafana/chime-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	exprs = nil
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	check("chime-dashboard.json", exprs)
}
