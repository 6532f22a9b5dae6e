package deploy

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/strata-ledger/strata/cluster"
)

// The Kubernetes manifests are checked offline by parsing them (yaml.v3)
// into the few fields these tests read: no cluster and no kubectl needed.

type k8sObject struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   k8sMeta           `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	Spec       yaml.Node         `yaml:"spec"`
	file       string
}

type k8sMeta struct {
	Name        string            `yaml:"name"`
	Namespace   string            `yaml:"namespace"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type k8sSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type k8sStatefulSet struct {
	ServiceName         string      `yaml:"serviceName"`
	Replicas            int         `yaml:"replicas"`
	PodManagementPolicy string      `yaml:"podManagementPolicy"`
	Selector            k8sSelector `yaml:"selector"`
	Template            struct {
		Metadata k8sMeta `yaml:"metadata"`
		Spec     struct {
			TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
			SecurityContext               struct {
				RunAsUser    int  `yaml:"runAsUser"`
				RunAsNonRoot bool `yaml:"runAsNonRoot"`
				FSGroup      int  `yaml:"fsGroup"`
			} `yaml:"securityContext"`
			Containers []k8sContainer `yaml:"containers"`
			Volumes    []struct {
				Name   string `yaml:"name"`
				Secret *struct {
					SecretName string `yaml:"secretName"`
					Items      []struct {
						Key  string `yaml:"key"`
						Path string `yaml:"path"`
					} `yaml:"items"`
				} `yaml:"secret"`
				ConfigMap *struct {
					Name string `yaml:"name"`
				} `yaml:"configMap"`
				EmptyDir any `yaml:"emptyDir"`
			} `yaml:"volumes"`
		} `yaml:"spec"`
	} `yaml:"template"`
	VolumeClaimTemplates []struct {
		Metadata k8sMeta `yaml:"metadata"`
	} `yaml:"volumeClaimTemplates"`
}

type k8sProbe struct {
	HTTPGet *struct {
		Path   string `yaml:"path"`
		Port   string `yaml:"port"`
		Scheme string `yaml:"scheme"`
	} `yaml:"httpGet"`
}

type k8sContainer struct {
	Name  string             `yaml:"name"`
	Image string             `yaml:"image"`
	Args  []string           `yaml:"args"`
	Ports []k8sContainerPort `yaml:"ports"`
	Env   []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			ConfigMapKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"configMapKeyRef"`
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
			FieldRef *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	ReadinessProbe k8sProbe `yaml:"readinessProbe"`
	LivenessProbe  k8sProbe `yaml:"livenessProbe"`
	StartupProbe   k8sProbe `yaml:"startupProbe"`
	Lifecycle      struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int `yaml:"seconds"`
			} `yaml:"sleep"`
			Exec *struct {
				Command []string `yaml:"command"`
			} `yaml:"exec"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type k8sContainerPort struct {
	Name          string `yaml:"name"`
	ContainerPort int    `yaml:"containerPort"`
	Protocol      string `yaml:"protocol"`
}

type k8sService struct {
	ClusterIP                string            `yaml:"clusterIP"`
	PublishNotReadyAddresses bool              `yaml:"publishNotReadyAddresses"`
	Selector                 map[string]string `yaml:"selector"`
	Ports                    []struct {
		Name       string `yaml:"name"`
		Port       int    `yaml:"port"`
		TargetPort string `yaml:"targetPort"`
		Protocol   string `yaml:"protocol"`
	} `yaml:"ports"`
}

type k8sPDB struct {
	Selector       k8sSelector `yaml:"selector"`
	MinAvailable   *int        `yaml:"minAvailable"`
	MaxUnavailable *int        `yaml:"maxUnavailable"`
}

const (
	k8sNamespace   = "strata"
	labelRegion    = "strata.io/region"
	labelComponent = "app.kubernetes.io/component"
)

// k8sAPIVersions is every kind the manifests may hold, with its API.
var k8sAPIVersions = map[string]string{
	"Namespace": "v1", "ConfigMap": "v1", "Service": "v1",
	"StatefulSet": "apps/v1", "PodDisruptionBudget": "policy/v1",
}

// tlsConfigKeys are the TLS files every node must have: nodes listen on
// their pod IP, and a node off loopback refuses to start without TLS and
// a gossip key (cluster/config_security.go).
var tlsConfigKeys = []string{"tls.ca_file", "tls.cert_file", "tls.key_file"}

// authSecret holds the agent's config file (tokens, cluster token) and the
// gossip key: what no ConfigMap may hold.
const authSecret = "strata-auth"

func readManifests(t *testing.T) []k8sObject {
	t.Helper()
	files, err := filepath.Glob("k8s/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in k8s/: %v", err)
	}
	var objs []k8sObject
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(fh)
		for {
			var o k8sObject
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			o.file = f
			objs = append(objs, o)
		}
		fh.Close()
	}
	return objs
}

func decodeSpec[T any](t *testing.T, o k8sObject) T {
	t.Helper()
	var v T
	if err := o.Spec.Decode(&v); err != nil {
		t.Fatalf("%s %s/%s: spec: %v", o.file, o.Kind, o.Metadata.Name, err)
	}
	return v
}

// matches reports whether selector selects an object labelled labels.
func matches(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// configKeys are the keys `strata agent` reads: NodeConfig's koanf tags,
// a block's keys dotted (tls.ca_file, backup.dir).
func configKeys() map[string]bool {
	keys := map[string]bool{}
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("koanf"), ",")
			if tag == "" {
				continue
			}
			if f.Type.Kind() == reflect.Struct {
				walk(prefix+tag+".", f.Type)
				continue
			}
			keys[prefix+tag] = true
		}
	}
	walk("", reflect.TypeFor[cluster.NodeConfig]())
	return keys
}

// envConfigKey is the config key a STRATA_ variable sets, as the agent maps
// it (cmd/strata's envKey): STRATA_HTTP_ADDR is http_addr, STRATA_TLS_CA_FILE
// tls.ca_file, STRATA_BACKUP_DIR backup.dir.
func envConfigKey(name string) (string, bool) {
	key, ok := strings.CutPrefix(name, "STRATA_")
	if !ok {
		return "", false
	}
	key = strings.ToLower(key)
	for _, block := range []string{"tls", "backup"} {
		if rest, ok := strings.CutPrefix(key, block+"_"); ok {
			return block + "." + rest, true
		}
	}
	return key, true
}

func TestK8s_EnvConfigKeysAreNodeConfigKeys(t *testing.T) {
	keys := configKeys()
	for _, k := range append([]string{"http_addr", "gossip_key", "join_wan", "backup.dir"}, tlsConfigKeys...) {
		if !keys[k] {
			t.Errorf("configKeys() lacks %s: %v", k, slices.Sorted(maps.Keys(keys)))
		}
	}
	for name, want := range map[string]string{"STRATA_TLS_CA_FILE": "tls.ca_file", "STRATA_GOSSIP_KEY": "gossip_key", "STRATA_BACKUP_DIR": "backup.dir"} {
		if got, _ := envConfigKey(name); got != want {
			t.Errorf("envConfigKey(%s) = %q, want %s", name, got, want)
		}
	}
	if k, _ := envConfigKey("STRATA_TLS_CA_PATH"); keys[k] {
		t.Errorf("STRATA_TLS_CA_PATH maps to a config key %s", k)
	}
}

type manifests struct {
	objs       []k8sObject
	configMaps map[string]k8sObject
	services   map[string]k8sObject
	sets       map[string]k8sStatefulSet
	setMeta    map[string]k8sObject
}

func loadManifests(t *testing.T) manifests {
	m := manifests{objs: readManifests(t), configMaps: map[string]k8sObject{}, services: map[string]k8sObject{},
		sets: map[string]k8sStatefulSet{}, setMeta: map[string]k8sObject{}}
	for _, o := range m.objs {
		switch o.Kind {
		case "ConfigMap":
			m.configMaps[o.Metadata.Name] = o
		case "Service":
			m.services[o.Metadata.Name] = o
		case "StatefulSet":
			m.sets[o.Metadata.Name] = decodeSpec[k8sStatefulSet](t, o)
			m.setMeta[o.Metadata.Name] = o
		}
	}
	return m
}

func TestK8s_KindsAndNamespaces(t *testing.T) {
	m := loadManifests(t)
	names := map[string]bool{}
	for _, o := range m.objs {
		where := fmt.Sprintf("%s %s/%s", o.file, o.Kind, o.Metadata.Name)
		if want, ok := k8sAPIVersions[o.Kind]; !ok {
			t.Errorf("%s: unexpected kind", where)
		} else if o.APIVersion != want {
			t.Errorf("%s: apiVersion %s, want %s", where, o.APIVersion, want)
		}
		if o.Kind != "Namespace" && o.Metadata.Namespace != k8sNamespace {
			t.Errorf("%s: namespace %q, want %s", where, o.Metadata.Namespace, k8sNamespace)
		}
		if key := o.Kind + "/" + o.Metadata.Name; names[key] {
			t.Errorf("%s: defined twice", where)
		} else {
			names[key] = true
		}
	}
	// One StatefulSet per region and role, each with a PDB.
	regions := map[string][]string{}
	for _, o := range m.setMeta {
		regions[o.Metadata.Labels[labelRegion]] = append(regions[o.Metadata.Labels[labelRegion]], o.Metadata.Labels[labelComponent])
	}
	if len(regions) < 3 {
		t.Errorf("StatefulSets cover regions %v, want at least 3", slices.Sorted(maps.Keys(regions)))
	}
	for r, roles := range regions {
		slices.Sort(roles)
		if !slices.Equal(roles, []string{"gate", "manager"}) {
			t.Errorf("region %s has StatefulSets for %v, want one gate and one manager", r, roles)
		}
	}
}

func TestK8s_SelectorsServicesAndBudgets(t *testing.T) {
	m := loadManifests(t)
	for name, ss := range m.sets {
		tmpl := ss.Template.Metadata.Labels
		if !matches(ss.Selector.MatchLabels, tmpl) {
			t.Errorf("StatefulSet %s: selector %v does not select its pods %v", name, ss.Selector.MatchLabels, tmpl)
		}
		if !maps.Equal(m.setMeta[name].Metadata.Labels, tmpl) {
			t.Errorf("StatefulSet %s: labels %v differ from its pods' %v", name, m.setMeta[name].Metadata.Labels, tmpl)
		}
		svcObj, ok := m.services[ss.ServiceName]
		if !ok {
			t.Errorf("StatefulSet %s: serviceName %s is not a Service here", name, ss.ServiceName)
			continue
		}
		svc := decodeSpec[k8sService](t, svcObj)
		if svc.ClusterIP != "None" || !svc.PublishNotReadyAddresses {
			t.Errorf("Service %s: want headless (clusterIP None) publishing not-ready addresses (gossip seeds)", ss.ServiceName)
		}
		if !matches(svc.Selector, tmpl) {
			t.Errorf("Service %s: selector %v does not select StatefulSet %s's pods %v", ss.ServiceName, svc.Selector, name, tmpl)
		}
		c := ss.Template.Spec.Containers[0]
		for _, p := range svc.Ports {
			i := slices.IndexFunc(c.Ports, func(cp k8sContainerPort) bool { return cp.Name == p.TargetPort })
			if i < 0 {
				t.Errorf("Service %s: port %s targets %q, not a port of %s", ss.ServiceName, p.Name, p.TargetPort, name)
				continue
			}
			if cp := c.Ports[i]; cp.ContainerPort != p.Port || proto(cp.Protocol) != proto(p.Protocol) {
				t.Errorf("Service %s: port %s %d/%s, container port %d/%s", ss.ServiceName, p.Name, p.Port, proto(p.Protocol), cp.ContainerPort, proto(cp.Protocol))
			}
		}
	}
	// Every PDB and every Service selects exactly one StatefulSet's pods.
	budgets := map[string]int{}
	for _, o := range m.objs {
		switch o.Kind {
		case "PodDisruptionBudget":
			pdb := decodeSpec[k8sPDB](t, o)
			var selected []string
			for name, ss := range m.sets {
				if matches(pdb.Selector.MatchLabels, ss.Template.Metadata.Labels) {
					selected = append(selected, name)
				}
			}
			if len(selected) != 1 {
				t.Errorf("PDB %s selects StatefulSets %v, want exactly one", o.Metadata.Name, selected)
				continue
			}
			budgets[selected[0]]++
			ss := m.sets[selected[0]]
			quorum := ss.Replicas/2 + 1
			switch {
			case pdb.MinAvailable != nil && *pdb.MinAvailable < quorum && ss.Replicas > 1:
				t.Errorf("PDB %s: minAvailable %d is below the quorum %d of %s", o.Metadata.Name, *pdb.MinAvailable, quorum, selected[0])
			case pdb.MinAvailable == nil && (pdb.MaxUnavailable == nil || *pdb.MaxUnavailable != 1):
				t.Errorf("PDB %s: want minAvailable (quorum) or maxUnavailable 1", o.Metadata.Name)
			}
		case "Service":
			svc := decodeSpec[k8sService](t, o)
			n := 0
			for _, ss := range m.sets {
				if matches(svc.Selector, ss.Template.Metadata.Labels) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("Service %s selects %d StatefulSets, want 1", o.Metadata.Name, n)
			}
		}
	}
	for name := range m.sets {
		if budgets[name] != 1 {
			t.Errorf("StatefulSet %s has %d PodDisruptionBudgets, want 1", name, budgets[name])
		}
	}
}

func proto(p string) string {
	if p == "" {
		return "TCP"
	}
	return p
}

// servedPaths are the routes the node's HTTP API registers (read from its
// source: the probes must point at endpoints that exist).
func servedPaths(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "cluster", "httpapi", "routes.go"))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, p := range []string{"/livez", "/readyz", "/metrics"} {
		if strings.Contains(string(b), `"`+p+`"`) {
			paths = append(paths, p)
		}
	}
	return paths
}

func TestK8s_PodsMatchTheNodeAndTheImage(t *testing.T) {
	m := loadManifests(t)
	keys := configKeys()
	served := servedPaths(t)
	gateReplicas := 0
	for _, ss := range m.sets {
		if ss.Template.Metadata.Labels[labelComponent] == "gate" {
			gateReplicas += ss.Replicas
		}
	}
	for name, ss := range m.sets {
		role := ss.Template.Metadata.Labels[labelComponent]
		region := ss.Template.Metadata.Labels[labelRegion]
		spec := ss.Template.Spec
		if len(spec.Containers) != 1 {
			t.Fatalf("%s: %d containers, want 1", name, len(spec.Containers))
		}
		c := spec.Containers[0]
		if !slices.Equal(c.Args, []string{"agent"}) {
			t.Errorf("%s: args %v, want [agent]", name, c.Args)
		}
		// The image's user (deploy/docker/Dockerfile).
		if sc := spec.SecurityContext; sc.RunAsUser != 65532 || !sc.RunAsNonRoot || sc.FSGroup != 65532 {
			t.Errorf("%s: securityContext %+v, want the image's user 65532, non-root, fsGroup 65532", name, sc)
		}
		if role == "manager" && (ss.Replicas < 3 || ss.Replicas%2 == 0) {
			t.Errorf("%s: %d managers, want an odd number, at least 3", name, ss.Replicas)
		}

		// Probes: readiness on /readyz, liveness on /livez, both on the API
		// port, over https: the node serves TLS only (a plain request gets 400).
		ports := map[string]int{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		for _, pr := range []struct {
			what  string
			probe k8sProbe
			path  string
		}{{"readinessProbe", c.ReadinessProbe, "/readyz"}, {"livenessProbe", c.LivenessProbe, "/livez"}, {"startupProbe", c.StartupProbe, "/livez"}} {
			switch g := pr.probe.HTTPGet; {
			case g == nil:
				t.Errorf("%s: no %s httpGet", name, pr.what)
			case g.Path != pr.path || !slices.Contains(served, g.Path):
				t.Errorf("%s: %s on %q, want %s (served: %v)", name, pr.what, g.Path, pr.path, served)
			case g.Port != "api":
				t.Errorf("%s: %s on port %q, want the API port", name, pr.what, g.Port)
			case g.Scheme != "HTTPS":
				t.Errorf("%s: %s scheme %q, want HTTPS (the API serves TLS only)", name, pr.what, g.Scheme)
			}
		}
		if ps := c.Lifecycle.PreStop; ps == nil || (ps.Sleep == nil && ps.Exec == nil) {
			t.Errorf("%s: no preStop hook", name)
		} else if ps.Sleep != nil && spec.TerminationGracePeriodSeconds < ps.Sleep.Seconds+30 {
			t.Errorf("%s: terminationGracePeriodSeconds %d leaves under 30 s to drain after preStop's %d s", name, spec.TerminationGracePeriodSeconds, ps.Sleep.Seconds)
		}

		// Environment: every STRATA_ variable is a config key the agent
		// reads, every address's port is the container port of that name,
		// ConfigMap and Secret references resolve.
		env := map[string]string{}
		secretRefs := map[string]string{} // variable -> secret/key
		for _, e := range c.Env {
			key, isStrata := envConfigKey(e.Name)
			if isStrata && key != "config" && !keys[key] {
				t.Errorf("%s: %s is no config key of strata agent", name, e.Name)
			}
			// A ConfigMap or Secret key is named after the config key, dots
			// as underscores (tls_ca_file).
			refKey := strings.ReplaceAll(key, ".", "_")
			switch {
			case e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil:
				ref := e.ValueFrom.ConfigMapKeyRef
				cm, ok := m.configMaps[ref.Name]
				if !ok {
					t.Errorf("%s: %s from ConfigMap %s, which is not here", name, e.Name, ref.Name)
					continue
				}
				v, ok := cm.Data[ref.Key]
				if !ok {
					t.Errorf("%s: %s from key %s, not in ConfigMap %s", name, e.Name, ref.Key, ref.Name)
				}
				if isStrata && !strings.HasSuffix(ref.Key, refKey) {
					t.Errorf("%s: %s comes from key %s: name the key after the config key %s", name, e.Name, ref.Key, refKey)
				}
				env[e.Name] = v
			case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
				ref := e.ValueFrom.SecretKeyRef
				if isStrata && ref.Key != refKey {
					t.Errorf("%s: %s comes from Secret key %s: name the key after the config key %s", name, e.Name, ref.Key, refKey)
				}
				secretRefs[e.Name] = ref.Name + "/" + ref.Key
				env[e.Name] = "(secret " + ref.Name + "/" + ref.Key + ")"
			case e.ValueFrom != nil:
				env[e.Name] = "(" + e.Name + ")"
			default:
				env[e.Name] = e.Value
			}
		}
		for variable, port := range map[string]string{"STRATA_HTTP_ADDR": "api", "STRATA_RAFT_ADDR": "raft", "STRATA_GOSSIP_ADDR": "gossip",
			"STRATA_GOSSIP_WAN_ADDR": "gossip-wan", "STRATA_DATA_PLANE_ADDR": "data-plane"} {
			addr, set := env[variable]
			wantSet := (variable != "STRATA_GOSSIP_WAN_ADDR" || role == "gate") && (variable != "STRATA_DATA_PLANE_ADDR" || role == "manager")
			if set != wantSet {
				t.Errorf("%s (%s): %s set=%v, want %v", name, role, variable, set, wantSet)
				continue
			}
			if !set {
				continue
			}
			host, p, err := net.SplitHostPort(addr)
			if n, _ := strconv.Atoi(p); err != nil || n != ports[port] || host != "$(POD_IP)" {
				t.Errorf("%s: %s = %q, want $(POD_IP):<%s port %d> (a node advertises its address; it must be an IP)", name, variable, addr, port, ports[port])
			}
		}
		if env["STRATA_ROLE"] != role || env["STRATA_REGION"] != region {
			t.Errorf("%s: role %q region %q, want %s %s (the pods' labels)", name, env["STRATA_ROLE"], env["STRATA_REGION"], role, region)
		}
		want := ss.Replicas
		if role == "gate" {
			want = gateReplicas // the global group's voters, in every region
		}
		if env["STRATA_BOOTSTRAP_EXPECT"] != strconv.Itoa(want) {
			t.Errorf("%s: bootstrap_expect %q, want %d", name, env["STRATA_BOOTSTRAP_EXPECT"], want)
		}
		for _, seed := range strings.Split(env["STRATA_JOIN"], ",") {
			if _, p, err := net.SplitHostPort(seed); err != nil || p != strconv.Itoa(ports["gossip"]) {
				t.Errorf("%s: join seed %q is not host:<gossip port>", name, seed)
			}
		}

		// Volumes: the data volume at the image's data dir, TLS files
		// under the TLS Secret's mount.
		volumes := map[string]bool{}
		for _, v := range spec.Volumes {
			volumes[v.Name] = true
		}
		for _, vc := range ss.VolumeClaimTemplates {
			volumes[vc.Metadata.Name] = true
		}
		mounts := map[string]string{}
		for _, vm := range c.VolumeMounts {
			if !volumes[vm.Name] {
				t.Errorf("%s: mounts volume %s, which is not defined", name, vm.Name)
			}
			mounts[vm.Name] = vm.MountPath
		}
		if mounts["data"] != "/data" || env["STRATA_DATA_DIR"] != "/data" {
			t.Errorf("%s: data volume at %q, data_dir %q, want /data (the image's volume)", name, mounts["data"], env["STRATA_DATA_DIR"])
		}
		tlsSecret := ""
		for _, v := range spec.Volumes {
			if v.Name == "tls" && v.Secret != nil {
				tlsSecret = v.Secret.SecretName
			}
		}
		if tlsSecret == "" {
			t.Errorf("%s: no tls volume from a Secret", name)
		}
		// Secure by default: a node on its pod IP starts only with TLS and
		// a gossip key, and none of them says insecure.
		for _, k := range tlsConfigKeys {
			f := env["STRATA_"+strings.ToUpper(strings.ReplaceAll(k, ".", "_"))]
			if mounts["tls"] == "" || !strings.HasPrefix(f, mounts["tls"]+"/") {
				t.Errorf("%s: %s = %q is not under the TLS Secret's mount %q", name, k, f, mounts["tls"])
			}
		}
		if ref := secretRefs["STRATA_GOSSIP_KEY"]; ref != authSecret+"/gossip_key" {
			t.Errorf("%s: STRATA_GOSSIP_KEY from Secret %q, want %s/gossip_key: a node off loopback refuses to start without a gossip key", name, ref, authSecret)
		}
		if v, set := env["STRATA_INSECURE"]; set {
			t.Errorf("%s: STRATA_INSECURE=%q: the manifests run secure", name, v)
		}
		authMounted := false
		for _, v := range spec.Volumes {
			if v.Name == "auth" && v.Secret != nil && v.Secret.SecretName == authSecret {
				authMounted = true
				// Only the config file is a file in the pod: the gossip
				// key reaches the agent as STRATA_GOSSIP_KEY.
				if len(v.Secret.Items) != 1 || v.Secret.Items[0].Key != "strata.yml" {
					t.Errorf("%s: the auth volume projects %v, want only strata.yml", name, v.Secret.Items)
				}
			}
		}
		if !authMounted {
			t.Errorf("%s: no auth volume from Secret %s", name, authSecret)
		}
		if cfg := env["STRATA_CONFIG"]; mounts["auth"] == "" || cfg != mounts["auth"]+"/strata.yml" {
			t.Errorf("%s: STRATA_CONFIG %q is not strata.yml in the auth Secret's mount %q", name, cfg, mounts["auth"])
		}
		if ann := ss.Template.Metadata.Annotations; ann["prometheus.io/port"] != strconv.Itoa(ports["api"]) || ann["prometheus.io/path"] != "/metrics" || ann["prometheus.io/scheme"] != "https" {
			t.Errorf("%s: prometheus annotations %v, want the API port, /metrics and scheme https", name, ann)
		}
	}
}
