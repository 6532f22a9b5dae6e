// Package keyring runs gossip keyring operations cluster-wide (`strata
// keyring`, as `consul keyring`): the gate that gets POST
// /v1/operator/keyring applies the operation to its own keyring and asks
// every member it knows, over the internal API (cluster token and, with
// TLS, a cluster certificate), to do the same; one gate of each other
// region (the lowest id) relays the operation to its region's members, so
// every node is asked once. A rotation is install
// (every node can read the new key), use (every node writes with it),
// remove (the old key is gone); each step reaches every node before the
// next is run, so gossip keeps working throughout.
//
// The node hands it narrow views: the members it sees, the node-to-node
// HTTP client, its memberlist keyring and how to persist it.
package keyring

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/members"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/gossip"
)

const (
	// Path is the internal endpoint of one node's keyring.
	Path = "/internal/v1/keyring"
	// maxTargets bounds the nodes one call asks.
	maxTargets = api.MaxClusterNodes
	// parallelism bounds the calls in flight at once.
	parallelism = 8
	// callTimeout bounds one node's answer (a relay's included).
	callTimeout = 10 * time.Second
	// maxBodyBytes bounds a keyring request or answer.
	maxBodyBytes = 1 << 20
)

// Config is what the service needs of its node.
type Config struct {
	NodeID, Region string
	// Gate: this node serves the API's keyring calls and relays to its
	// region; a manager only applies what it is asked.
	Gate         bool
	ClusterToken string
	Members      func() []members.Member
	HTTPClient   func() *http.Client
	// Keyring is the node's gossip keyring; nil: gossip is not encrypted.
	Keyring *memberlist.Keyring
	// Save persists the keys, primary first, after a change.
	Save func(keys [][]byte) error
	// DecodeKey checks and decodes a base64 gossip key.
	DecodeKey func(string) ([]byte, error)
	// MaxKeys bounds the keys a keyring holds.
	MaxKeys int
	Logger  *slog.Logger
}

// Service is one node's keyring service. Safe for concurrent use.
type Service struct {
	cfg Config
	mu  sync.Mutex // serialises keyring changes and their file
}

// New builds the service.
func New(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg}
}

// call is the internal request: the operation, and whether the receiving
// gate relays it to its region.
type call struct {
	api.KeyringRequest
	Relay bool `json:"relay,omitempty"`
}

// KeyringOp runs req on this node and every member it knows (httpapi's
// Keyring); managers refuse it (the route's home is the gates).
func (s *Service) KeyringOp(ctx context.Context, req api.KeyringRequest) (api.KeyringResponse, error) {
	if !s.cfg.Gate {
		return api.KeyringResponse{}, &httpx.APIError{Status: http.StatusNotImplemented, Code: httpx.CodeBadRequest, Message: "keyring operations run on gates"}
	}
	if req.Op != api.KeyringList {
		if _, err := s.cfg.DecodeKey(req.Key); err != nil {
			return api.KeyringResponse{}, httpx.BadRequest("key: %v", err)
		}
	}
	out := []api.KeyringNode{s.apply(req)}
	out = append(out, s.fanOut(ctx, req, func(members.Member) bool { return true })...)
	slices.SortFunc(out, func(a, b api.KeyringNode) int { return strings.Compare(a.Region+"/"+a.NodeID, b.Region+"/"+b.NodeID) })
	return api.KeyringResponse{Nodes: out}, nil
}

// fanOut asks the alive members that want picks (never this node) to run
// req. A gate asks one gate of each other region (the lowest id) to relay
// it to that region, and leaves that region's other nodes to it, so each
// node is asked once however many gates a region has; a node of another
// region with no alive gate is asked directly.
func (s *Service) fanOut(ctx context.Context, req api.KeyringRequest, want func(members.Member) bool) []api.KeyringNode {
	type target struct {
		m     members.Member
		relay bool
	}
	var alive []members.Member
	relays := map[string]members.Member{} // region -> its relaying gate
	for _, m := range s.cfg.Members() {
		if m.Meta.NodeID == s.cfg.NodeID || m.Status != members.MemberAlive || !want(m) {
			continue
		}
		alive = append(alive, m)
		if s.cfg.Gate && m.Meta.Role == gossip.RoleGate && m.Meta.Region != s.cfg.Region {
			if r, ok := relays[m.Meta.Region]; !ok || m.Meta.NodeID < r.Meta.NodeID {
				relays[m.Meta.Region] = m
			}
		}
	}
	var targets []target
	for _, m := range alive {
		r, relayed := relays[m.Meta.Region]
		switch {
		case !relayed:
			targets = append(targets, target{m: m})
		case r.Meta.NodeID == m.Meta.NodeID:
			targets = append(targets, target{m: m, relay: true})
		}
		if len(targets) == maxTargets {
			break
		}
	}
	var (
		mu  sync.Mutex
		out []api.KeyringNode
		wg  sync.WaitGroup
		sem = make(chan struct{}, parallelism)
	)
	for _, tg := range targets {
		m := tg.m
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			got, err := s.send(ctx, m.Meta.APIAddr, call{KeyringRequest: req, Relay: tg.relay})
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

func (s *Service) send(ctx context.Context, addr string, c call) ([]api.KeyringNode, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	body, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+Path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.cfg.ClusterToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.cfg.HTTPClient().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes))
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

// ServeHTTP is the internal endpoint (Path): run the operation here and,
// when asked to relay, on this gate's region.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !auth.PeerTokenOK(r, s.cfg.ClusterToken) {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusUnauthorized, Code: httpx.CodeUnauthenticated, Message: "internal call without the cluster token"})
		return
	}
	var c call
	if err := httpx.DecodeJSON(r, maxBodyBytes, &c); err != nil {
		httpx.WriteError(w, err)
		return
	}
	out := []api.KeyringNode{s.apply(c.KeyringRequest)}
	if c.Relay && s.cfg.Gate {
		out = append(out, s.fanOut(r.Context(), c.KeyringRequest, func(m members.Member) bool { return m.Meta.Region == s.cfg.Region })...)
	}
	httpx.WriteJSON(w, http.StatusOK, api.KeyringResponse{Nodes: out})
}

// apply runs one operation on this node's keyring and, if it changed,
// saves it; it answers the keyring as it is after.
func (s *Service) apply(req api.KeyringRequest) api.KeyringNode {
	out := api.KeyringNode{NodeID: s.cfg.NodeID, Region: s.cfg.Region}
	kr := s.cfg.Keyring
	if kr == nil {
		out.Error = "gossip is not encrypted on this node (no gossip_key)"
		return out
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.Op != api.KeyringList {
		if err := s.change(kr, req); err != nil {
			out.Error = err.Error()
		} else {
			s.cfg.Logger.Info("gossip keyring changed", "op", req.Op)
		}
	}
	for _, k := range kr.GetKeys() {
		out.Keys = append(out.Keys, base64.StdEncoding.EncodeToString(k))
	}
	out.Primary = base64.StdEncoding.EncodeToString(kr.GetPrimaryKey())
	return out
}

// change applies one install, use or remove and saves the keyring,
// primary first, so a restart keeps the rotation. If the save fails the
// keyring is put back as it was: a node never gossips with a keyring its
// file would not give it after a restart. s.mu is held.
func (s *Service) change(kr *memberlist.Keyring, req api.KeyringRequest) error {
	key, err := s.cfg.DecodeKey(req.Key)
	if err != nil {
		return err
	}
	before, beforePrimary := cloneKeys(kr.GetKeys()), bytes.Clone(kr.GetPrimaryKey())
	switch req.Op {
	case api.KeyringInstall:
		// Installing a key the ring holds is a no-op (a retried step),
		// even when the ring is full.
		if !slices.ContainsFunc(before, func(k []byte) bool { return bytes.Equal(k, key) }) && len(before) >= s.cfg.MaxKeys {
			return fmt.Errorf("keyring holds %d keys already", s.cfg.MaxKeys)
		}
		err = kr.AddKey(key)
	case api.KeyringUse:
		err = kr.UseKey(key)
	case api.KeyringRemove:
		err = kr.RemoveKey(key)
	default:
		err = fmt.Errorf("op %q", req.Op)
	}
	if err != nil {
		return err
	}
	primary := kr.GetPrimaryKey()
	keys := [][]byte{primary}
	for _, k := range kr.GetKeys() {
		if !bytes.Equal(k, primary) {
			keys = append(keys, k)
		}
	}
	if err := s.cfg.Save(keys); err != nil {
		restore(kr, before, beforePrimary)
		return fmt.Errorf("save keyring (unchanged): %w", err)
	}
	return nil
}

// restore puts kr back to keys with primary, undoing one change.
func restore(kr *memberlist.Keyring, keys [][]byte, primary []byte) {
	for _, k := range keys {
		_ = kr.AddKey(k) // keys of the ring before: valid
	}
	_ = kr.UseKey(primary)
	for _, k := range cloneKeys(kr.GetKeys()) {
		if !slices.ContainsFunc(keys, func(o []byte) bool { return bytes.Equal(o, k) }) {
			_ = kr.RemoveKey(k)
		}
	}
}

// cloneKeys copies keys: memberlist's GetKeys shares its slice, which a
// later RemoveKey rewrites in place.
func cloneKeys(keys [][]byte) [][]byte {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = bytes.Clone(k)
	}
	return out
}
