package aestatus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/transport/api"
)

// Internal endpoints (POST, as every internal route; cluster token).
const (
	// NodePath answers a node's own report; with ?run=1 a region's leader
	// runs a regional ↔ global round first.
	NodePath = "/internal/v1/antientropy/node"
	// RegionPath answers, on a gate, the reports of its region's nodes:
	// its own and its region's managers' (?run=1 is passed on).
	RegionPath = "/internal/v1/antientropy/region"
	// maxAnswerBytes bounds an answer: a region's nodes' reports.
	maxAnswerBytes = 1 << 20
)

// Peer is a node to ask.
type Peer struct{ ID, APIAddr string }

// Config wires a Gatherer. Managers and RegionGates are used on gates only.
type Config struct {
	// Self is this node's report; run asks a region's leader to run a
	// round first.
	Self         func(ctx context.Context, run bool) api.AntiEntropyNode
	Managers     func() []Peer // this region's managers
	RegionGates  func() []Peer // one gate of every other region
	Client       *http.Client
	ClusterToken string
}

// Gatherer gathers the cluster's anti-entropy status.
type Gatherer struct{ cfg Config }

// New returns a Gatherer.
func New(cfg Config) (*Gatherer, error) {
	if cfg.Self == nil || cfg.Client == nil || cfg.ClusterToken == "" {
		return nil, errors.New("aestatus: Self, Client and ClusterToken are required")
	}
	return &Gatherer{cfg: cfg}, nil
}

// Status is the cluster's status, as a gate gathers it; run has every
// region's leader run a round first.
func (g *Gatherer) Status(ctx context.Context, run bool) (api.AntiEntropyStatus, error) {
	if g.cfg.RegionGates == nil || g.cfg.Managers == nil {
		return api.AntiEntropyStatus{}, errors.New("aestatus: the cluster's status is gathered by gates")
	}
	nodes, unreachable := g.region(ctx, run)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range g.cfg.RegionGates() {
		wg.Go(func() {
			var got []api.AntiEntropyNode
			err := g.get(ctx, p, RegionPath, run, &got)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				unreachable = append(unreachable, p.ID)
				return
			}
			nodes = append(nodes, got...)
		})
	}
	wg.Wait()
	return Aggregate(nodes, unreachable), nil
}

// region is this gate's and its region's managers' reports.
func (g *Gatherer) region(ctx context.Context, run bool) ([]api.AntiEntropyNode, []string) {
	nodes := []api.AntiEntropyNode{g.cfg.Self(ctx, false)}
	var unreachable []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range g.cfg.Managers() {
		wg.Go(func() {
			var n api.AntiEntropyNode
			err := g.get(ctx, p, NodePath, run, &n)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				unreachable = append(unreachable, p.ID)
				return
			}
			nodes = append(nodes, n)
		})
	}
	wg.Wait()
	return nodes, unreachable
}

func (g *Gatherer) get(ctx context.Context, p Peer, path string, run bool, out any) error {
	u := "http://" + p.APIAddr + path
	if run {
		u += "?run=1"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, http.NoBody)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+g.cfg.ClusterToken)
	resp, err := g.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || len(body) > maxAnswerBytes {
		return fmt.Errorf("%s: %d", p.ID, resp.StatusCode)
	}
	return json.Unmarshal(body, out)
}

// NodeHandler answers NodePath.
func (g *Gatherer) NodeHandler(w http.ResponseWriter, r *http.Request) {
	run, ok := g.internal(w, r)
	if ok {
		writeJSON(w, g.cfg.Self(r.Context(), run))
	}
}

// RegionHandler answers RegionPath (gates).
func (g *Gatherer) RegionHandler(w http.ResponseWriter, r *http.Request) {
	run, ok := g.internal(w, r)
	if !ok {
		return
	}
	if g.cfg.Managers == nil {
		http.Error(w, "not a gate", http.StatusMisdirectedRequest)
		return
	}
	nodes, _ := g.region(r.Context(), run)
	writeJSON(w, nodes)
}

// internal checks the cluster token and reads ?run=.
func (g *Gatherer) internal(w http.ResponseWriter, r *http.Request) (run, ok bool) {
	if !auth.PeerTokenOK(r, g.cfg.ClusterToken) {
		http.Error(w, "internal call without the cluster token", http.StatusUnauthorized)
		return false, false
	}
	run, _ = strconv.ParseBool(r.URL.Query().Get("run"))
	return run, true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
