package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/transport/api"
)

// Keyring runs a gossip keyring operation on every node of the cluster
// (cluster/wire_keyring.go): the gate that gets the call asks each node.
type Keyring interface {
	KeyringOp(ctx context.Context, req api.KeyringRequest) (api.KeyringResponse, error)
}

// internalPrefix starts every node-to-node path.
const internalPrefix = "/internal/"

// requirePeerCert refuses an internal call that did not present a client
// certificate the listener verified against the cluster CA, when the API
// serves TLS: a node-to-node call needs both the cluster token (checked
// by each internal handler) and a certificate of the cluster.
func (sv *Server) requirePeerCert(next http.Handler) http.Handler {
	if sv.cfg.TLS == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, internalPrefix) && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
			httpx.WriteError(w, &httpx.APIError{Status: http.StatusUnauthorized, Code: httpx.CodeUnauthenticated,
				Message: "internal call without a client certificate of the cluster CA"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (sv *Server) handleClusterStatus(w http.ResponseWriter, _ *http.Request, _ *call) {
	out := api.ClusterStatus{NodeID: sv.cfg.NodeID, Role: string(sv.cfg.Role), Region: sv.cfg.Region,
		Security: sv.cfg.Security()}
	if sv.cfg.Role == RoleManager { // the region's maintenance mode (issue 18), as this node applied it
		if st, err := sv.maintenance(); err == nil {
			out.Maintenance = &st
		}
	} else if st, err := sv.clusterMaintenance(); err == nil && st.HLC != nil { // a gate: the cluster's, once set
		out.Maintenance = &st
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

func (sv *Server) handleKeyring(w http.ResponseWriter, r *http.Request, c *call) {
	if sv.cfg.Keyring == nil {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusNotImplemented, Code: httpx.CodeBadRequest, Message: "this node runs no keyring operations"})
		return
	}
	req := api.KeyringRequest{Op: api.KeyringList}
	if r.Method == http.MethodPost {
		if err := httpx.DecodeBytes(c.body, &req); err != nil {
			httpx.WriteError(w, err)
			return
		}
		switch req.Op {
		case api.KeyringInstall, api.KeyringUse, api.KeyringRemove:
		default:
			httpx.WriteError(w, httpx.BadRequest("op %q: want %s, %s or %s", req.Op, api.KeyringInstall, api.KeyringUse, api.KeyringRemove))
			return
		}
	}
	out, err := sv.cfg.Keyring.KeyringOp(r.Context(), req)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}
