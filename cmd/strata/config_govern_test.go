package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// The governance keys of a manager (issue 18): breakers and per-type
// retry defaults load from the file; bad values are refused.
func TestLoadNodeConfig_GovernanceKeys(t *testing.T) {
	load := func(extra string) error {
		t.Helper()
		path := filepath.Join(t.TempDir(), "node.yaml")
		if err := os.WriteFile(path, []byte(baseYAML+extra), 0o600); err != nil {
			t.Fatal(err)
		}
		fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
		addNodeFlags(fs)
		if err := fs.Parse([]string{"--config", path}); err != nil {
			t.Fatal(err)
		}
		cfg, err := loadNodeConfig(fs, nil)
		if err != nil {
			return err
		}
		b, r := cfg.Breakers.Govern(), cfg.RetryDefaults["render"].Govern()
		if b.MinSamples != 20 || b.FailureRate != 0.6 || b.CoolDown != 10*time.Second || b.Window != time.Minute {
			t.Fatalf("breakers %+v", b)
		}
		if r.MaxAttempts != 3 || r.InitialBackoff != 2*time.Second || len(r.RetryOn) != 1 || r.RetryOn[0] != "timeout" {
			t.Fatalf("retry default %+v", r)
		}
		return nil
	}
	good := "breakers:\n  min_samples: 20\n  failure_rate: 0.6\n  cool_down: 10s\n" +
		"retry_defaults:\n  render:\n    max_attempts: 3\n    initial_backoff: 2s\n    retry_on: [timeout]\n"
	if err := load(good); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		"breakers:\n  failure_rate: 1.5\n",
		"retry_defaults:\n  render:\n    max_attempts: 0\n",
		"retry_defaults:\n  render:\n    max_attempts: 3\n    retry_on: [cosmic_ray]\n",
		"retry_defaults:\n  \"bad type\":\n    max_attempts: 3\n",
	} {
		if err := load(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
