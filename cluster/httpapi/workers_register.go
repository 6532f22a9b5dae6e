package httpapi

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/transport/api"
)

// Registration and departure of workers: WorkerJoined and WorkerLeft in
// the region's ledger, proposed by the regional leader.

// registerResponse is the answer to a registration of worker id that
// joined at joined: the only answer that carries the worker's data-plane
// key (the call is authenticated as the worker).
func (sv *Server) registerResponse(id string, capacity uint32, joined hlc.Timestamp, wr api.WriteResponse) api.RegisterWorkerResponse {
	out := api.RegisterWorkerResponse{WorkerID: id, Region: sv.cfg.Region, Capacity: capacity,
		AckWindow: fsm.Duration(sv.cfg.WorkerAckWindow), HeartbeatInterval: fsm.Duration(sv.cfg.WorkerAckWindow / 3),
		WriteResponse: wr}
	if sv.cfg.DataPlane != nil {
		dp := sv.cfg.DataPlane.Access(id, joined)
		out.DataPlane = &dp
	}
	return out
}

// dataPlaneFill is the progress receive queue's fill, 0 without one.
func (sv *Server) dataPlaneFill() float64 {
	if sv.cfg.DataPlane == nil {
		return 0
	}
	return sv.cfg.DataPlane.QueueFill()
}

// handleRegisterWorker is POST /v1/workers.
func (sv *Server) handleRegisterWorker(w http.ResponseWriter, r *http.Request, c *call) {
	body := c.body
	level, err := sv.writeLevel(r)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	var req api.RegisterWorkerRequest
	if err := httpx.DecodeBytes(body, &req); err != nil {
		httpx.WriteError(w, err)
		return
	}
	if req.WorkerID == "" && c.p.Worker != "" && c.p.Worker != auth.AnyWorker {
		req.WorkerID = c.p.Worker // a bound token registers its own worker
	}
	if req.WorkerID != "" {
		if err := workerAccess(c.p, req.WorkerID); err != nil {
			httpx.WriteError(w, err)
			return
		}
	}
	if err := sv.checkRegistration(&req); err != nil {
		httpx.WriteError(w, err)
		return
	}
	generated := req.WorkerID == ""
	cur, err := sv.pickWorkerID(&req)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	if cur != nil && cur.Active {
		sv.answerActiveWorker(w, cur, &req)
		return
	}
	res, ts, err := commitOwn(r.Context(), &sv.cfg, level, fsm.Event{Type: fsm.TypeWorkerJoined,
		Body: &fsm.WorkerJoined{Worker: req.WorkerID, Capacity: req.Capacity}})
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	if len(res.Results) == 1 && errors.Is(res.Results[0].Err, fsm.ErrWorkerExists) && !generated {
		// A concurrent registration of the same id won: answer as a
		// repeat once this node has applied the entry.
		if err := sv.cfg.Applied.Wait(r.Context(), res.Index); err != nil {
			httpx.WriteError(w, submitError(err, res, sv.cfg.NodeID))
			return
		}
		if cur, err := sv.ledgerWorker(req.WorkerID); err == nil && cur != nil && cur.Active {
			sv.answerActiveWorker(w, cur, &req)
			return
		}
	}
	if err := resultError(res); err != nil {
		httpx.WriteError(w, err)
		return
	}
	sv.cfg.Workers.Touch(req.WorkerID)
	w.Header().Set("Location", "/v1/workers/"+req.WorkerID)
	httpx.WriteJSON(w, http.StatusCreated, sv.registerResponse(req.WorkerID, req.Capacity, ts, sv.writeResponse(w, res, ts)))
}

// checkRegistration refuses a registration with another region, a
// capacity out of range or a malformed worker id.
func (sv *Server) checkRegistration(req *api.RegisterWorkerRequest) error {
	if req.Region != sv.cfg.Region {
		return &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: fmt.Sprintf("region %q: this manager serves region %s; register with a manager of your region", req.Region, sv.cfg.Region),
			Details: map[string]any{"field": "region"}}
	}
	if req.Capacity < 1 || req.Capacity > MaxWorkerCapacity {
		return &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: fmt.Sprintf("capacity %d: must be 1..%d", req.Capacity, MaxWorkerCapacity),
			Details: map[string]any{"field": "capacity", "limit": MaxWorkerCapacity}}
	}
	if req.WorkerID != "" {
		return checkWorkerID(req.WorkerID)
	}
	return nil
}

// pickWorkerID returns the ledger's state of the requested worker id, or
// fills in a generated id that the ledger has never seen.
func (sv *Server) pickWorkerID(req *api.RegisterWorkerRequest) (*fsm.WorkerState, error) {
	if req.WorkerID != "" {
		return sv.ledgerWorker(req.WorkerID)
	}
	for range maxWorkerIDTries {
		id := newWorkerID()
		cur, err := sv.ledgerWorker(id)
		if err != nil {
			return nil, err
		}
		if cur == nil {
			req.WorkerID = id
			return nil, nil
		}
	}
	return nil, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable,
		Message: fmt.Sprintf("no free worker id after %d draws: retry, or name the worker", maxWorkerIDTries)}
}

// answerActiveWorker answers a registration of a worker that is already
// active: 200 with the same worker when region and capacity match (a
// repeated registration), 409 otherwise.
func (sv *Server) answerActiveWorker(w http.ResponseWriter, cur *fsm.WorkerState, req *api.RegisterWorkerRequest) {
	if cur.Region != req.Region || cur.Capacity != req.Capacity {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusConflict, Code: httpx.CodeConflict,
			Message: fmt.Sprintf("worker %s is active in region %s with capacity %d: deregister it before registering it with region %s and capacity %d",
				cur.ID, cur.Region, cur.Capacity, req.Region, req.Capacity),
			Details: map[string]any{"worker": cur.ID, "region": cur.Region, "capacity": cur.Capacity}})
		return
	}
	sv.cfg.Workers.Touch(cur.ID)
	w.Header().Set("Location", "/v1/workers/"+cur.ID)
	httpx.WriteJSON(w, http.StatusOK, sv.registerResponse(cur.ID, cur.Capacity, cur.HLC, api.WriteResponse{Durability: sv.cfg.Tier.String(), HLC: cur.HLC}))
}

// handleDeregisterWorker is DELETE /v1/workers/{id}: the worker leaves; the
// reconciler reschedules what it held. Deregistering a worker that already
// left is a no-op; one never registered is a 404.
func (sv *Server) handleDeregisterWorker(w http.ResponseWriter, r *http.Request, c *call) {
	id, ok := workerIDParam(w, r)
	if !ok {
		return
	}
	level, err := sv.writeLevel(r)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	cur, err := sv.ledgerWorker(id)
	switch {
	case err != nil:
		httpx.WriteError(w, err)
		return
	case cur == nil:
		httpx.WriteError(w, sv.unknownWorker(id))
		return
	case !cur.Active:
		httpx.WriteJSON(w, http.StatusOK, api.WriteResponse{Durability: sv.cfg.Tier.String(), HLC: cur.HLC})
		return
	}
	res, ts, err := commitOwn(r.Context(), &sv.cfg, level, fsm.Event{Type: fsm.TypeWorkerLeft,
		Body: &fsm.WorkerLeft{Worker: id, Reason: WorkerLeftReason}})
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	// A concurrent leave won the race: the worker is gone all the same.
	if len(res.Results) == 1 && !errors.Is(res.Results[0].Err, fsm.ErrUnknownWorker) {
		if err := resultError(res); err != nil {
			httpx.WriteError(w, err)
			return
		}
	}
	sv.cfg.Workers.Forget(id)
	httpx.WriteJSON(w, http.StatusOK, sv.writeResponse(w, res, ts))
}
