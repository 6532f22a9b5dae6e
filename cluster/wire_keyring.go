package cluster

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/members"
	"github.com/strata-ledger/strata/transport/api"
)

// The gossip keyring, cluster-wide (`strata keyring`, as `consul keyring`):
// the gate that gets POST /v1/operator/keyring applies the operation to its
// own keyring and asks every member it knows, over the internal API (cluster
// token and, with TLS, a cluster certificate), to do the same; a gate of
// another region relays the operation to its region's members. A rotation
// is install (every node can read the new key), use (every node writes
// with it), remove (the old key is gone); each step reaches every node
// before the next is run, so gossip keeps working throughout.
const (
	// KeyringPath is the internal endpoint of one node's keyring.
	KeyringPath = "/internal/v1/keyring"
	// maxKeyringTargets bounds the nodes one call asks.
	maxKeyringTargets = api.MaxClusterNodes
	// keyringParallelism bounds the calls in flight at once.
	keyringParallelism = 8
	// keyringCallTimeout bounds one node's answer (a relay's included).
	keyringCallTimeout = 10 * time.Second
	// maxKeyringBodyBytes bounds a keyring request or answer.
	maxKeyringBodyBytes = 1 << 20
)

// keyringCall is the internal request: the operation, and whether the
// receiving gate relays it to its region.
type keyringCall struct {
	api.KeyringRequest
	Relay bool `json:"relay,omitempty"`
}

// keyringAPI is the node's keyring service for the API, nil on managers
// (the route's home is the gates).
func (n *Node) keyringAPI() keyringService {
	if !n.role.gate {
		return keyringService{}
	}
	return keyringService{n}
}

// keyringService adapts Node to httpapi.Keyring; its zero value serves nothing.
type keyringService struct{ n *Node }

// KeyringOp runs req on this node and every member it knows.
func (s keyringService) KeyringOp(ctx context.Context, req api.KeyringRequest) (api.KeyringResponse, error) {
	if s.n == nil {
		return api.KeyringResponse{}, &httpx.APIError{Status: http.StatusNotImplemented, Code: httpx.CodeBadRequest, Message: "keyring operations run on gates"}
	}
	if req.Op != api.KeyringList {
		if _, err := DecodeGossipKey(req.Key); err != nil {
			return api.KeyringResponse{}, httpx.BadRequest("key: %v", err)
		}
	}
	n := s.n
	out := []api.KeyringNode{n.applyKeyring(req)}
	out = append(out, n.fanOutKeyring(ctx, req, func(m members.Member) bool { return true })...)
	slices.SortFunc(out, func(a, b api.KeyringNode) int { return strings.Compare(a.Region+"/"+a.NodeID, b.Region+"/"+b.NodeID) })
	return api.KeyringResponse{Nodes: out}, nil
}

// fanOutKeyring asks the alive members that want picks (never this node)
// to run req; gates of other regions relay it to theirs.
func (n *Node) fanOutKeyring(ctx context.Context, req api.KeyringRequest, want func(members.Member) bool) []api.KeyringNode {
	var targets []members.Member
	for _, m := range n.members.Members() {
		if m.Meta.NodeID != n.cfg.NodeID && m.Status == members.MemberAlive && want(m) && len(targets) < maxKeyringTargets {
			targets = append(targets, m)
		}
	}
	var (
		mu  sync.Mutex
		out []api.KeyringNode
		wg  sync.WaitGroup
		sem = make(chan struct{}, keyringParallelism)
	)
	for _, m := range targets {
		relay := n.role.gate && m.Meta.Role == RoleGate && m.Meta.Region != n.cfg.Region
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			got, err := n.callKeyring(ctx, m.Meta.APIAddr, keyringCall{KeyringRequest: req, Relay: relay})
			if err != nil {
				got = []api.KeyringNode{{NodeID: m.Meta.NodeID, Region: m.Meta.Region, Error: err.Error()}}
			}
			mu.Lock()
			out = append(out, got...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

func (n *Node) callKeyring(ctx context.Context, addr string, call keyringCall) ([]api.KeyringNode, error) {
	ctx, cancel := context.WithTimeout(ctx, keyringCallTimeout)
	defer cancel()
	body, err := json.Marshal(call)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+KeyringPath, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+n.cfg.ClusterToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.peers.HTTPClient().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxKeyringBodyBytes))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	var out api.KeyringResponse
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("keyring answer: %w", err)
	}
	return out.Nodes, nil
}

// handleKeyringCall is the internal endpoint: run the operation here,
// and, when asked to relay, on this gate's region.
func (n *Node) handleKeyringCall(w http.ResponseWriter, r *http.Request) {
	if !auth.PeerTokenOK(r, n.cfg.ClusterToken) {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusUnauthorized, Code: httpx.CodeUnauthenticated, Message: "internal call without the cluster token"})
		return
	}
	var call keyringCall
	if err := httpx.DecodeJSON(r, maxKeyringBodyBytes, &call); err != nil {
		httpx.WriteError(w, err)
		return
	}
	out := []api.KeyringNode{n.applyKeyring(call.KeyringRequest)}
	if call.Relay && n.role.gate {
		out = append(out, n.fanOutKeyring(r.Context(), call.KeyringRequest, func(m members.Member) bool { return m.Meta.Region == n.cfg.Region })...)
	}
	httpx.WriteJSON(w, http.StatusOK, api.KeyringResponse{Nodes: out})
}

// applyKeyring runs one operation on this node's keyring and, if it
// changed, writes the keyring file; it answers the keyring as it is after.
func (n *Node) applyKeyring(req api.KeyringRequest) api.KeyringNode {
	out := api.KeyringNode{NodeID: n.cfg.NodeID, Region: n.cfg.Region}
	if n.sec.keyring == nil {
		out.Error = "gossip is not encrypted on this node (no gossip_key)"
		return out
	}
	n.sec.keyMu.Lock()
	defer n.sec.keyMu.Unlock()
	var err error
	if req.Op != api.KeyringList {
		var key []byte
		if key, err = DecodeGossipKey(req.Key); err == nil {
			switch req.Op {
			case api.KeyringInstall:
				if len(n.sec.keyring.GetKeys()) >= maxGossipKeys {
					err = fmt.Errorf("keyring holds %d keys already", maxGossipKeys)
				} else {
					err = n.sec.keyring.AddKey(key)
				}
			case api.KeyringUse:
				err = n.sec.keyring.UseKey(key)
			case api.KeyringRemove:
				err = n.sec.keyring.RemoveKey(key)
			default:
				err = fmt.Errorf("op %q", req.Op)
			}
		}
		if err == nil {
			err = n.saveKeyringLocked()
		}
		if err == nil {
			n.log.Info("gossip keyring changed", "op", req.Op)
		}
	}
	if err != nil {
		out.Error = err.Error()
	}
	for _, k := range n.sec.keyring.GetKeys() {
		out.Keys = append(out.Keys, base64.StdEncoding.EncodeToString(k))
	}
	out.Primary = base64.StdEncoding.EncodeToString(n.sec.keyring.GetPrimaryKey())
	return out
}

// saveKeyringLocked writes the keyring, primary first, so a restart keeps
// the rotation. keyMu is held.
func (n *Node) saveKeyringLocked() error {
	primary := n.sec.keyring.GetPrimaryKey()
	keys := [][]byte{primary}
	for _, k := range n.sec.keyring.GetKeys() {
		if !bytes.Equal(k, primary) {
			keys = append(keys, k)
		}
	}
	return writeKeyringFile(n.sec.keyringFile, keys)
}
