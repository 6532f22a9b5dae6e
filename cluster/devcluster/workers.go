package devcluster

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

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

// workerTokenEnv carries the API token to a worker (cmd/strata's
// STRATA_TOKEN).
const workerTokenEnv = "STRATA_TOKEN"

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
			id := fmt.Sprintf("w-%s-%d", region, i)
			dir := filepath.Join(o.DataDir, id)
			out = append(out, WorkerSpec{ID: id, Region: region, Managers: managers, Capacity: o.WorkerCapacity,
				LogLevel: o.LogLevel, Dir: dir, LogPath: filepath.Join(dir, "worker.log")})
		}
	}
	return out, nil
}

// workerNode describes a worker as cluster.json does.
func workerNode(w WorkerSpec, pid int) api.ClusterNode {
	return api.ClusterNode{NodeID: w.ID, Role: api.ClusterRoleWorker, Region: w.Region, DataDir: w.Dir, PID: pid}
}
