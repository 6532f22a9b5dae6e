package devcluster

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/transport/api"
)

// WorkerSpec is one planned reference worker: `strata worker` pointed at
// its region's managers.
type WorkerSpec struct {
	ID       string   // w-{region}-{i}, i from 1
	Region   string   // its region
	Managers []string // API addresses of the region's managers, in plan order
	Capacity int
	LogLevel string
	Dir      string // DATA/<id>: the worker's working directory
	LogPath  string // DATA/<id>/worker.log
}

// Args is the worker's command line after the binary. The API token is
// not in it (a command line is visible to every user of the machine): the
// launcher passes it in the worker's environment as STRATA_TOKEN.
func (w WorkerSpec) Args() []string {
	return []string{"worker", "--manager", strings.Join(w.Managers, ","), "--region", w.Region,
		"--capacity", strconv.Itoa(w.Capacity), "--id", w.ID, "--log-level", w.LogLevel}
}

// workerTokenEnv carries the worker's token to it (cmd/strata's
// STRATA_TOKEN); workerCAFileEnv, in a TLS cluster, the CA its managers'
// certificates chain to (STRATA_CA_FILE).
const (
	workerTokenEnv  = "STRATA_TOKEN"
	workerCAFileEnv = "STRATA_CA_FILE"
)

// PlanWorkers lays out o.WorkersPerRegion workers per region, region by
// region, each pointed at the managers Plan gives its region. It does no
// I/O.
func PlanWorkers(o Options) ([]WorkerSpec, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	var out []WorkerSpec
	for r, region := range o.Regions {
		managers := make([]string, 0, o.ManagersPerRegion)
		for m := 1; m <= o.ManagersPerRegion; m++ {
			managers = append(managers, o.addr(r, o.GatesPerRegion+m, offsetHTTP))
		}
		for i := 1; i <= o.WorkersPerRegion; i++ {
			id := workerID(region, i)
			dir := filepath.Join(o.DataDir, id)
			out = append(out, WorkerSpec{ID: id, Region: region, Managers: managers, Capacity: o.WorkerCapacity,
				LogLevel: o.LogLevel, Dir: dir, LogPath: filepath.Join(dir, "worker.log")})
		}
	}
	return out, nil
}

func workerID(region string, i int) string { return fmt.Sprintf("w-%s-%d", region, i) }

// workerTokens are the tokens of every planned worker, each bound to its
// worker id (scope worker): a worker's token cannot act for another.
func (o Options) workerTokens() []auth.TokenConfig {
	var out []auth.TokenConfig
	for _, region := range o.Regions {
		for i := 1; i <= o.WorkersPerRegion; i++ {
			id := workerID(region, i)
			out = append(out, auth.TokenConfig{Token: WorkerToken(o.Token, id), Tenant: auth.AllTenants,
				Scopes: []string{string(auth.ScopeWorker)}, Worker: id})
		}
	}
	return out
}

// ViewerToken is the dev cluster's read-only token (jobs:read on every
// tenant: it sees jobs, not the cluster, and cancels nothing), derived
// from the API token as the workers' are: what the web console shows a
// user without the write scope.
func ViewerToken(apiToken string) string {
	m := hmac.New(sha256.New, []byte(apiToken))
	m.Write([]byte("strata dev viewer token v1"))
	return "strata-viewer-" + hex.EncodeToString(m.Sum(nil)[:16])
}

// WorkerToken is worker id's token, derived from the cluster's API token
// (HMAC-SHA256), so every node's config and the launcher agree on it
// without another secret on disk.
func WorkerToken(apiToken, id string) string {
	m := hmac.New(sha256.New, []byte(apiToken))
	m.Write([]byte("strata dev worker token v1\x00" + id))
	return "strata-worker-" + hex.EncodeToString(m.Sum(nil)[:16])
}

// workerNode describes a worker as cluster.json does.
func workerNode(w WorkerSpec, pid int) api.ClusterNode {
	return api.ClusterNode{NodeID: w.ID, Role: api.ClusterRoleWorker, Region: w.Region, DataDir: w.Dir, PID: pid}
}
