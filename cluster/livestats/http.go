package livestats

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
)

// The I/O edge: a gate's handler for pushes and a manager's pusher.

// pushTimeout bounds one push to one gate: a slow gate misses a sample,
// it never holds the next.
const pushTimeout = time.Second

// Handler answers POST Path on a gate: the cluster token, then a checked
// body into b. 204 on success.
func Handler(b *Board, clusterToken string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !auth.PeerTokenOK(r, clusterToken) {
			httpx.WriteError(w, &httpx.APIError{Status: http.StatusUnauthorized, Code: httpx.CodeUnauthenticated,
				Message: "internal call without the cluster token"})
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxPushBytes))
		if err != nil {
			httpx.WriteError(w, httpx.TooLarge(MaxPushBytes))
			return
		}
		p, err := Decode(body)
		if err != nil {
			httpx.WriteError(w, httpx.BadRequest("%v", err))
			return
		}
		b.Add(p)
		w.WriteHeader(http.StatusNoContent)
	}
}

// PusherConfig is what a Pusher needs.
type PusherConfig struct {
	Client       *http.Client
	ClusterToken string
	// Gates returns the API addresses (host:port) of the gates to push
	// to: every gate gossip knows.
	Gates      func() []string
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Pusher sends a manager's pushes to every gate from one goroutine
// (Run). Send never blocks: a push not yet sent is replaced by the next
// (counted), so a slow gate costs live figures, never the flush loop.
type Pusher struct {
	cfg     PusherConfig
	mu      sync.Mutex
	next    *Push
	wake    chan struct{}
	results *prometheus.CounterVec
}

// NewPusher builds a Pusher and registers its counter,
// strata_live_pushes_total{result}.
func NewPusher(cfg PusherConfig) (*Pusher, error) {
	p := &Pusher{cfg: cfg, wake: make(chan struct{}, 1),
		results: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_live_pushes_total",
			Help: "Live statistics pushes to gates by result (ok, failed, replaced, dropped_samples)."}, []string{"result"})}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(p.results); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Send queues push for Run, replacing one not yet sent.
func (p *Pusher) Send(push *Push, droppedSamples int) {
	if droppedSamples > 0 {
		p.results.WithLabelValues("dropped_samples").Add(float64(droppedSamples))
	}
	p.mu.Lock()
	if p.next != nil {
		p.results.WithLabelValues("replaced").Inc()
	}
	p.next = push
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run sends queued pushes until ctx ends.
func (p *Pusher) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
		p.mu.Lock()
		push := p.next
		p.next = nil
		p.mu.Unlock()
		if push == nil {
			continue
		}
		body, err := json.Marshal(push)
		if err != nil {
			continue // a Push always marshals
		}
		var wg sync.WaitGroup
		for _, addr := range p.cfg.Gates() {
			wg.Go(func() { p.post(ctx, addr, body) })
		}
		wg.Wait()
	}
}

// post sends one push to one gate.
func (p *Pusher) post(ctx context.Context, addr string, body []byte) {
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+Path, bytes.NewReader(body))
	if err == nil {
		req.Header.Set("Authorization", "Bearer "+p.cfg.ClusterToken)
		req.Header.Set("Content-Type", "application/json")
		var resp *http.Response
		if resp, err = p.cfg.Client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				err = &httpx.APIError{Status: resp.StatusCode, Message: "live push refused"}
			}
		}
	}
	if err != nil {
		p.results.WithLabelValues("failed").Inc()
		if p.cfg.Logger != nil {
			p.cfg.Logger.Debug("live push failed", "gate", addr, "err", err)
		}
		return
	}
	p.results.WithLabelValues("ok").Inc()
}
