package devcluster

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/structs"
	"github.com/knadh/koanf/v2"

	"github.com/strata-ledger/strata/cluster"
)

// loadAgentConfig reads an agent.yaml the way `strata agent --config`
// does (cmd/strata/config.go): defaults, then the file, by koanf tag.
func loadAgentConfig(path string) (cluster.NodeConfig, error) {
	k := koanf.New(".")
	if err := k.Load(structs.Provider(cluster.DefaultNodeConfig(), "koanf"), nil); err != nil {
		return cluster.NodeConfig{}, err
	}
	if err := k.Load(file.Provider(path), yaml.Parser()); err != nil {
		return cluster.NodeConfig{}, err
	}
	var cfg cluster.NodeConfig
	err := k.UnmarshalWithConf("", &cfg, koanf.UnmarshalConf{Tag: "koanf"})
	return cfg, err
}

func TestEncodeNodeConfig_AgentReadsBackTheSameConfig(t *testing.T) {
	o := testOptions(t.TempDir())
	o.WANLatency = 75 * time.Millisecond
	o.EnableFaultInjection = true
	specs, err := Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []NodeSpec{specs[0], specs[1]} { // a gate and a manager
		b, err := encodeNodeConfig(s.Config)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "wan_latency: 75ms") {
			t.Errorf("wan_latency is not a duration string:\n%s", b)
		}
		path := filepath.Join(t.TempDir(), "agent.yaml")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := loadAgentConfig(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.JoinWAN) == 0 && len(s.Config.JoinWAN) == 0 {
			got.JoinWAN = s.Config.JoinWAN // nil and [] mean the same
		}
		if !reflect.DeepEqual(got, s.Config) {
			t.Errorf("%s: read back\n%+v\nwant\n%+v\nyaml:\n%s", s.ID(), got, s.Config, b)
		}
	}
}

func TestLoadSecrets_CreatedOnceThenReused(t *testing.T) {
	dir := t.TempDir()
	first, err := loadSecrets(dir, secrets{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Token) < minTokenLen || len(first.ClusterToken) < minTokenLen || first.Token == first.ClusterToken {
		t.Fatalf("secrets %+v", first)
	}
	fi, err := os.Stat(filepath.Join(dir, secretsFileName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("secrets mode %v, want 0600", fi.Mode().Perm())
	}
	again, err := loadSecrets(dir, secrets{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Fatalf("restart got %+v, want %+v", again, first)
	}
	if _, err := loadSecrets(dir, secrets{Token: "another-token-0123456789"}, false); err == nil || !strings.Contains(err.Error(), "other tokens") {
		t.Fatalf("another token: err = %v", err)
	}
}

func TestLoadSecrets_UsesGivenTokensOnFirstStart(t *testing.T) {
	want := secrets{Token: testToken, ClusterToken: testClusterToken}
	got, err := loadSecrets(t.TempDir(), want, false)
	if err != nil || got != want {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
}

func TestLoadSecrets_CorruptFileIsNamed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, secretsFileName)
	if err := os.WriteFile(path, []byte(`{"token":"short"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadSecrets(dir, secrets{}, false); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want it to name %s", err, path)
	}
}

func writeClusterJSON(t *testing.T, dir string, specs []NodeSpec) {
	t.Helper()
	f := clusterFileOf(dir, testToken, nil, specs, nil, nil)
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, clusterFileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestCheckShape(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(dir)
	o.Regions = []string{"use1", "euw1"}
	specs, err := Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkShape(dir, specs); err != nil {
		t.Fatalf("empty dir: %v", err)
	}
	writeClusterJSON(t, dir, specs)
	if err := checkShape(dir, specs); err != nil {
		t.Fatalf("same shape: %v", err)
	}
	moved := testOptions(filepath.Join(dir, "elsewhere"))
	moved.Regions = o.Regions
	movedSpecs, _ := Plan(moved)
	if err := checkShape(dir, movedSpecs); err != nil {
		t.Fatalf("same shape, other paths: %v", err)
	}

	tests := []struct {
		name  string
		edit  func(*Options)
		inErr string
	}{
		{"other regions", func(o *Options) { o.Regions = []string{"use1", "apse1"} }, "euw1-gate1 is recorded but not planned"},
		{"fewer managers", func(o *Options) { o.ManagersPerRegion = 2 }, "use1-mgr3 is recorded but not planned"},
		{"more regions", func(o *Options) { o.Regions = []string{"use1", "euw1", "apse1"} }, "apse1-gate1 is planned but not recorded"},
		{"other subnet", func(o *Options) { o.SubnetBase = 20 }, `node use1-gate1: api_addr is "127.0.10.1:7100" in the data dir, "127.0.20.1:7100" in the plan`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o2 := o
			tt.edit(&o2)
			other, err := Plan(o2)
			if err != nil {
				t.Fatal(err)
			}
			err = checkShape(dir, other)
			if !errors.Is(err, ErrShapeMismatch) || !strings.Contains(err.Error(), tt.inErr) {
				t.Fatalf("err = %v, want ErrShapeMismatch containing %q", err, tt.inErr)
			}
		})
	}
}

func TestCheckShape_NodeDirWithoutClusterFile(t *testing.T) {
	dir := t.TempDir()
	stray := filepath.Join(dir, "apse1-mgr1")
	if err := os.MkdirAll(stray, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stray, "agent.yaml"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	o := testOptions(dir)
	o.Regions = []string{"use1"}
	specs, _ := Plan(o)
	if err := checkShape(dir, specs); !errors.Is(err, ErrShapeMismatch) || !strings.Contains(err.Error(), "apse1-mgr1") {
		t.Fatalf("err = %v", err)
	}
}

func FuzzDecodeSecrets(f *testing.F) {
	f.Add([]byte(`{"token":"strata-0123456789abcdef","cluster_token":"ABCDEFGHIJKLMNOPQRSTUVWXYZ"}`))
	f.Add([]byte(`{"token":""}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSecrets(b)
		if err != nil {
			return
		}
		if len(s.Token) < minTokenLen || len(s.ClusterToken) < minTokenLen {
			t.Fatalf("accepted short tokens %+v", s)
		}
		enc, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeSecrets(enc)
		if err != nil || again != s {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, s)
		}
	})
}

func FuzzDecodeClusterFile(f *testing.F) {
	o := testOptions("/d")
	specs, _ := Plan(o)
	o.WorkersPerRegion = 1
	workers, _ := PlanWorkers(o)
	seed, _ := json.Marshal(clusterFileOf("/d", testToken, nil, specs, workers, map[string]int{"use1-gate1": 42, "w-euw1-1": 43}))
	f.Add(seed)
	f.Add([]byte(`{"nodes":[{"node_id":"x","pid":-1}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cf, err := decodeClusterFile(b)
		if err != nil {
			return
		}
		enc, err := json.Marshal(cf)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeClusterFile(enc)
		if err != nil || !reflect.DeepEqual(again, cf) {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, cf)
		}
	})
}

func TestDecode_RejectsOversizedFiles(t *testing.T) {
	big := make([]byte, maxStateFileBytes+1)
	if _, err := decodeSecrets(big); err == nil {
		t.Error("secrets: accepted an oversized file")
	}
	if _, err := decodeClusterFile(big); err == nil {
		t.Error("cluster file: accepted an oversized file")
	}
}
