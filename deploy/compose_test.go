package deploy

import (
	"context"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The compose cluster (compose/docker-compose.yml) is checked offline: the
// file is parsed with its variables at their defaults, and every node's
// addresses must sit on the networks it is on, as the topology says
// (gates on their region and the WAN, managers and workers on their
// region only). `make compose-smoke` runs it for real.

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Networks map[string]struct {
		IPAM struct {
			Config []struct {
				Subnet string `yaml:"subnet"`
			} `yaml:"config"`
		} `yaml:"ipam"`
	} `yaml:"networks"`
	Volumes map[string]any `yaml:"volumes"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	ReadOnly    bool              `yaml:"read_only"`
	Networks    map[string]struct {
		IPv4 string `yaml:"ipv4_address"`
	} `yaml:"networks"`
	Healthcheck struct {
		Test    []string `yaml:"test"`
		Disable bool     `yaml:"disable"`
	} `yaml:"healthcheck"`
}

var composeVar = regexp.MustCompile(`\$\{([A-Z_]+):-([^}]*)\}`)

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile("compose/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	b = composeVar.ReplaceAll(b, []byte("$2")) // every variable at its default
	var f composeFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return f
}

// TestCompose_TopologyAndSecurity: three regions of one gate, three
// managers and two workers; one network per region and a WAN network
// that only gates join; every node's advertised addresses on the right
// network; TLS files and the config file on every node, never insecure.
func TestCompose_TopologyAndSecurity(t *testing.T) {
	f := loadCompose(t)
	keys := configKeys()
	regions := []string{"use1", "euw1", "apse1"}
	subnets := map[string]*net.IPNet{}
	for name, n := range f.Networks {
		if len(n.IPAM.Config) != 1 {
			t.Fatalf("network %s: want one subnet", name)
		}
		_, ipn, err := net.ParseCIDR(n.IPAM.Config[0].Subnet)
		if err != nil {
			t.Fatalf("network %s: %v", name, err)
		}
		subnets[name] = ipn
	}
	if got, want := slices.Sorted(func(yield func(string) bool) {
		for n := range subnets {
			if !yield(n) {
				return
			}
		}
	}), []string{"apse1", "euw1", "use1", "wan"}; !slices.Equal(got, want) {
		t.Fatalf("networks %v, want %v", got, want)
	}
	var want []string
	for _, r := range regions {
		want = append(want, r+"-gate1", r+"-mgr1", r+"-mgr2", r+"-mgr3", r+"-worker1", r+"-worker2")
	}
	var got []string
	for name := range f.Services {
		got = append(got, name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("services %v, want %v", got, want)
	}

	// onNet checks that host:port addr is svc's address on network n.
	onNet := func(name string, svc composeService, key, addr, n string) {
		t.Helper()
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			t.Errorf("%s: %s %q: %v", name, key, addr, err)
			return
		}
		if ip := svc.Networks[n].IPv4; host != ip {
			t.Errorf("%s: %s %s is not its address %q on network %s", name, key, addr, ip, n)
		}
	}
	for name, svc := range f.Services {
		region, role, _ := strings.Cut(name, "-")
		role = strings.TrimRight(role, "0123456789")
		nets := slices.Sorted(func(yield func(string) bool) {
			for n := range svc.Networks {
				if !yield(n) {
					return
				}
			}
		})
		wantNets := []string{region}
		if role == "gate" {
			wantNets = slices.Sorted(slices.Values([]string{region, "wan"}))
		}
		if !slices.Equal(nets, wantNets) {
			t.Errorf("%s: networks %v, want %v", name, nets, wantNets)
		}
		for n, a := range svc.Networks {
			if ip := net.ParseIP(a.IPv4); ip == nil || subnets[n] == nil || !subnets[n].Contains(ip) {
				t.Errorf("%s: address %q is not in network %s", name, a.IPv4, n)
			}
		}
		if !svc.ReadOnly {
			t.Errorf("%s: want a read-only root file system", name)
		}
		env := svc.Environment
		if role == "worker" {
			if svc.Command[0] != "worker" || !slices.Contains(svc.Command, "--region") || env["STRATA_CA_FILE"] == "" || !svc.Healthcheck.Disable {
				t.Errorf("%s: want `strata worker --region`, the CA and no node health check: %v %v", name, svc.Command, env)
			}
			continue
		}
		for k := range env {
			key, _ := envConfigKey(k)
			if key != "config" && !keys[key] {
				t.Errorf("%s: %s is not a config key of strata agent", name, k)
			}
		}
		if env["STRATA_NODE_ID"] != name || env["STRATA_REGION"] != region || env["STRATA_ROLE"] != map[string]string{"gate": "gate", "mgr": "manager"}[role] {
			t.Errorf("%s: node_id %q region %q role %q", name, env["STRATA_NODE_ID"], env["STRATA_REGION"], env["STRATA_ROLE"])
		}
		for _, k := range []string{"STRATA_TLS_CA_FILE", "STRATA_TLS_CERT_FILE", "STRATA_TLS_KEY_FILE", "STRATA_CONFIG"} {
			if env[k] == "" {
				t.Errorf("%s: %s unset: the cluster runs TLS with the generated config", name, k)
			}
		}
		if _, ok := env["STRATA_INSECURE"]; ok {
			t.Errorf("%s: sets STRATA_INSECURE", name)
		}
		if !slices.Equal(svc.Healthcheck.Test, []string{"CMD", "/strata", "health", "--path", "/livez"}) {
			t.Errorf("%s: health check %v", name, svc.Healthcheck.Test)
		}
		if _, ok := f.Volumes[name]; !ok || !slices.Contains(svc.Volumes, name+":/data") {
			t.Errorf("%s: want its own named volume at /data", name)
		}
		onNet(name, svc, "http_addr", env["STRATA_HTTP_ADDR"], region)
		onNet(name, svc, "gossip_addr", env["STRATA_GOSSIP_ADDR"], region)
		for _, seed := range strings.Split(env["STRATA_JOIN"], ",") {
			if host, _, _ := net.SplitHostPort(seed); !subnets[region].Contains(net.ParseIP(host)) {
				t.Errorf("%s: LAN seed %s is not on network %s", name, seed, region)
			}
		}
		if role == "gate" {
			for _, k := range []string{"STRATA_HTTP_WAN_ADDR", "STRATA_RAFT_ADDR", "STRATA_GOSSIP_WAN_ADDR"} {
				onNet(name, svc, k, env[k], "wan")
			}
			if seeds := strings.Split(env["STRATA_JOIN_WAN"], ","); len(seeds) != len(regions) {
				t.Errorf("%s: WAN seeds %v, want every gate", name, seeds)
			}
		} else {
			onNet(name, svc, "raft_addr", env["STRATA_RAFT_ADDR"], region)
			onNet(name, svc, "data_plane_addr", env["STRATA_DATA_PLANE_ADDR"], region)
		}
	}
}

// TestCompose_DockerComposeAcceptsTheFile runs `docker-compose config`
// when the binary is installed.
func TestCompose_DockerComposeAcceptsTheFile(t *testing.T) {
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Skip("docker-compose not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-f", "compose/docker-compose.yml", "config", "--services")
	cmd.Env = append(os.Environ(), "STRATA_COMPOSE_WORKER_TOKEN=x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, out)
	}
	if n := len(strings.Fields(string(out))); n != 18 {
		t.Errorf("docker-compose config lists %d services, want 18:\n%s", n, out)
	}
}
