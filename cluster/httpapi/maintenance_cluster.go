package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/govern"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/members"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// The cluster-wide maintenance mode (issue 18 §2), served by the gates:
// an operator's record in the global ledger (govern.KindMaintenance under
// govern.ClusterMaintenanceKey, a PolicySet audited with its reason and
// ticket in the fleet's chain, tenant ""), which the global leader copies
// into every region (cluster/lifecycle, clustermaint.go). GET answers
// with the record and every region's own status, asked of a node of each
// region, so one call shows whether every region holds the mode.

// Bounds of GET /v1/maintenance/cluster's questions to the regions.
const (
	// maxMaintenanceRegions bounds the regions asked (the cluster's
	// regions as gossip knows them, sorted).
	maxMaintenanceRegions = 64
	// maintenanceAskTimeout bounds one region's answer: a region that
	// is down is reported as such, it does not hold the call.
	maintenanceAskTimeout = 5 * time.Second
	// maxMaintenanceAnswerBytes bounds one region's answer.
	maxMaintenanceAnswerBytes = 64 << 10
)

// handleGetClusterMaintenance is GET /v1/maintenance/cluster: any token,
// like a region's GET /v1/maintenance (no tenant's data, and no node
// address: a region that cannot be asked is named with the reason only).
func (sv *Server) handleGetClusterMaintenance(w http.ResponseWriter, r *http.Request, _ *call) {
	st, err := sv.clusterMaintenance()
	if err != nil {
		httpx.WriteError(w, readError(err))
		return
	}
	out := api.ClusterMaintenanceStatus{Cluster: st, Regions: sv.askRegions(r)}
	sv.setReadHeaders(w)
	httpx.WriteJSON(w, http.StatusOK, out)
}

// clusterMaintenance reads the cluster's record from this node's ledger.
func (sv *Server) clusterMaintenance() (api.MaintenanceStatus, error) {
	st := api.MaintenanceStatus{Scope: api.MaintenanceScopeCluster}
	err := sv.cfg.Store.View(func(tx fsm.ReadTx) error {
		_, err := readMaintenanceRecord(tx, govern.ClusterMaintenanceKey, &st)
		return err
	})
	return st, err
}

// handleSetClusterMaintenance is POST /v1/maintenance/cluster: turn the
// cluster's mode on (draining or not) or off (operators, scope
// maintenance:write), committed at GLOBAL. A region's own mode is not
// touched: a region an operator put in maintenance stays there.
func (sv *Server) handleSetClusterMaintenance(w http.ResponseWriter, r *http.Request, c *call) {
	if !c.p.Allows(auth.ScopeMaintenanceWrite, auth.AllTenants) {
		httpx.WriteError(w, forbidden(c.p, auth.ScopeMaintenanceWrite, ""))
		return
	}
	var req api.ClusterMaintenanceRequest
	if err := httpx.DecodeBytes(c.body, &req); err != nil {
		httpx.WriteError(w, err)
		return
	}
	rec := govern.MaintenanceRecord{On: req.On, Drain: req.Drain, SinceMs: time.Now().UnixMilli()}
	ts, res, ok := sv.commitMaintenance(w, r, c, govern.ClusterMaintenanceKey, rec, req.GovernanceChange)
	if !ok {
		return
	}
	out := api.MaintenanceResponse{WriteResponse: sv.writeResponse(w, res, ts)}
	out.Maintenance = api.MaintenanceStatus{Scope: api.MaintenanceScopeCluster, On: req.On, Drain: req.Drain, Since: rec.SinceMs,
		Reason: req.Reason, Ticket: req.Ticket, Requestor: c.p.Name, HLC: &ts}
	httpx.WriteJSON(w, http.StatusOK, out)
}

// askRegions asks a node of every region gossip knows for the region's
// maintenance status (GET /v1/maintenance with the caller's token), at
// once, each within maintenanceAskTimeout; sorted by region.
func (sv *Server) askRegions(r *http.Request) []api.MaintenanceStatus {
	targets := sv.maintenanceTargets()
	out := make([]api.MaintenanceStatus, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			if t.addr == "" {
				out[i] = api.MaintenanceStatus{Scope: api.MaintenanceScopeRegion, Region: t.region,
					Error: "no alive node of the region is known to gossip"}
				return
			}
			out[i] = sv.askRegion(r, t.region, t.addr)
		})
	}
	wg.Wait()
	return out
}

// maintenanceTarget is the node asked for a region ("" if none is alive).
type maintenanceTarget struct{ region, addr string }

// maintenanceTargets picks, for each region gossip knows (at most
// maxMaintenanceRegions, sorted), a node to ask: a manager of this
// node's region (LAN), a gate of another (WAN), which forwards to a
// manager of its own. The regional leader is preferred where known.
func (sv *Server) maintenanceTargets() []maintenanceTarget {
	regions := map[string]string{sv.cfg.Region: ""}
	leader := sv.cfg.Consensus.Leader().ID
	for _, m := range sv.cfg.Members.Members() {
		region := m.Meta.Region
		if !fsm.IsRegion(region) {
			continue
		}
		if _, ok := regions[region]; !ok {
			regions[region] = ""
		}
		pool, role := members.PoolWAN, RoleGate
		if region == sv.cfg.Region {
			pool, role = members.PoolLAN, RoleManager
		}
		pm, ok := m.In(pool)
		if !ok || pm.Status != members.MemberAlive || m.Meta.Role != role || m.Meta.APIAddr == "" || m.Meta.NodeID == sv.cfg.NodeID {
			continue
		}
		if regions[region] == "" || m.Meta.NodeID == leader {
			regions[region] = m.Meta.APIAddr
		}
	}
	names := make([]string, 0, len(regions))
	for r := range regions {
		names = append(names, r)
	}
	sort.Strings(names)
	names = names[:min(len(names), maxMaintenanceRegions)]
	out := make([]maintenanceTarget, len(names))
	for i, r := range names {
		out[i] = maintenanceTarget{region: r, addr: regions[r]}
	}
	return out
}

// askRegion sends GET /v1/maintenance to addr, a node of region, as a
// call this node makes (its own hop, signed) with the caller's token.
func (sv *Server) askRegion(r *http.Request, region, addr string) api.MaintenanceStatus {
	failed := func(format string, a ...any) api.MaintenanceStatus {
		return api.MaintenanceStatus{Scope: api.MaintenanceScopeRegion, Region: region, Error: fmt.Sprintf(format, a...)}
	}
	ctx, cancel := context.WithTimeout(r.Context(), maintenanceAskTimeout)
	defer cancel()
	// A strong read (the default): the gate of another region forwards
	// it to one of its managers, which forwards it to its leader unless
	// it is the leader (maxForwardHops allows the three hops).
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+api.PathMaintenance, nil)
	if err != nil {
		return failed("%v", err)
	}
	if v := r.Header.Get("Authorization"); v != "" {
		req.Header.Set("Authorization", v)
	}
	sv.setHops(req, nil)
	resp, err := sv.cfg.Peers.HTTPClient().Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return failed("no answer within %s", maintenanceAskTimeout)
		}
		return failed("no node of the region could be reached")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMaintenanceAnswerBytes))
	if err != nil {
		return failed("the answer broke off")
	}
	if resp.StatusCode != http.StatusOK {
		var env api.ErrorEnvelope
		if json.Unmarshal(body, &env) == nil && env.Error != nil {
			return failed("answered %d %s: %s", resp.StatusCode, env.Error.Code, env.Error.Message)
		}
		return failed("answered %d", resp.StatusCode)
	}
	var st api.MaintenanceStatus
	if err := json.Unmarshal(body, &st); err != nil || st.Region != region {
		return failed("answered for region %q, not %s", st.Region, region)
	}
	return st
}
