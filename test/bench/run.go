package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/strata-ledger/strata/transport/api"
)

// Progress counts finished requests while a run lasts; the progress bar
// reads it.
type Progress struct {
	OK     atomic.Int64
	Failed atomic.Int64
	Late   atomic.Int64 // open loop: slots that came due while every worker was busy
}

// Run sends cfg's workload until cfg.Requests have been sent, cfg.Duration
// has passed or ctx ends, and returns what it measured. Requests cut short
// by the end are not counted. Run fails only on a bad config or, with
// cfg.WaitReady, on nodes that do not become ready; failed requests are
// counted in the result, by cause.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	return run(ctx, cfg, systemClock{}, &Progress{})
}

// run is Run with the clock and progress counters given: tests pass a
// manual clock and watch the counters.
func run(ctx context.Context, cfg Config, clk clock, progress *Progress) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	var nonce [4]byte
	_, _ = rand.Read(nonce[:]) // crypto/rand.Read never fails
	s, err := newSpec(cfg, binary.BigEndian.Uint32(nonce[:]), clk.Now())
	if err != nil {
		return nil, err
	}
	bases := make([]string, len(cfg.Addrs))
	for i, a := range cfg.Addrs {
		bases[i], _ = baseURL(a) // checked by Validate
	}
	httpClient := &http.Client{
		Timeout: cfg.RequestTimeout,
		Transport: &http.Transport{
			Proxy:               nil, // loopback benchmarks must not go through a proxy
			DialContext:         (&net.Dialer{Timeout: cfg.RequestTimeout, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        cfg.Clients,
			MaxIdleConnsPerHost: cfg.Clients,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
			TLSClientConfig:     cfg.TLS,
		},
	}
	defer httpClient.CloseIdleConnections()
	if cfg.WaitReady > 0 {
		if err := waitReady(ctx, httpClient, cfg.Target, bases, cfg.WaitReady); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
	}

	start := clk.Now()
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	stopBar := startProgressBar(cfg.Progress, progress, cfg.Requests, cfg.Duration)

	clients := make([]*client, cfg.Clients)
	for i := range clients {
		clients[i] = &client{
			gen: s.generator(i), url: bases[i%len(bases)] + s.path(), token: cfg.Token,
			etcd: cfg.Target == TargetEtcd, http: httpClient, clk: clk, progress: progress,
			errors: map[string]int64{}, rejected: map[string]int64{},
		}
	}
	var p *pacer
	if cfg.Rate > 0 {
		p = newPacer(clk, start, cfg.Rate, cfg.Requests, cfg.Clients, progress)
		openLoop(runCtx, p, clients)
	} else {
		closedLoop(runCtx, cfg.Requests, clients)
	}
	elapsed := clk.Now().Sub(start)
	stopBar()
	res := newResult(cfg, s, bases, start, elapsed, clients, p)
	res.TLS = cfg.TLS != nil
	return res, nil
}

// closedLoop runs every client until limit requests are sent in all (0:
// no limit) or ctx ends; each sends its next request when the previous
// one is answered.
func closedLoop(ctx context.Context, limit int64, clients []*client) {
	var issued atomic.Int64
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				if limit > 0 && issued.Add(1) > limit {
					return
				}
				if !c.do(ctx, time.Time{}) {
					c.backoff(ctx)
				}
			}
		})
	}
	wg.Wait()
}

// openLoop lets the pacer hand its slots to the clients, as a pool of
// workers, until it stops; a request's latency counts from its slot.
func openLoop(ctx context.Context, p *pacer, clients []*client) {
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			for at := range p.work {
				c.maxLag = max(c.maxLag, c.clk.Now().Sub(at))
				c.do(ctx, at)
				p.done()
			}
		})
	}
	p.run(ctx)
	wg.Wait()
}

// client is one sender: a closed-loop client, or an open-loop worker.
type client struct {
	gen      *generator
	url      string
	token    string
	etcd     bool
	http     *http.Client
	clk      clock
	progress *Progress

	hist     Histogram
	ok       int64 // requests answered with success
	events   int64 // events those requests carried, minus rejected ones
	failed   int64
	errors   map[string]int64 // failed requests by cause
	rejected map[string]int64 // events a successful batch rejected, by code
	maxLag   time.Duration    // open loop: the longest from a slot's due time to this worker taking it
	resp     bytes.Buffer
}

// do sends one request and records its outcome; it reports false if
// the request failed. The latency counts from "from" (an open-loop slot)
// or, if that is zero, from the moment the request is sent.
func (c *client) do(ctx context.Context, from time.Time) bool {
	body, events := c.gen.next(c.clk.Now())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return c.fail("request: " + err.Error())
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if from.IsZero() {
		from = c.clk.Now()
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return true // cut by the end of the run: not counted
		}
		return c.fail(transportCause(err))
	}
	c.resp.Reset()
	_, err = c.resp.ReadFrom(io.LimitReader(resp.Body, maxResponseBytes))
	resp.Body.Close()
	latency := c.clk.Now().Sub(from)
	if err != nil {
		if ctx.Err() != nil {
			return true
		}
		return c.fail(transportCause(err))
	}
	if resp.StatusCode/100 != 2 {
		return c.fail(c.statusCause(resp.StatusCode, c.resp.Bytes()))
	}
	c.hist.Record(latency)
	c.ok++
	c.events += int64(events - c.countRejected(c.resp.Bytes()))
	c.progress.OK.Add(1)
	return true
}

// fail records a failed request; it returns false, for do to pass on.
func (c *client) fail(cause string) bool {
	c.failed++
	c.errors[cause]++
	c.progress.Failed.Add(1)
	return false
}

// backoff pauses a closed-loop client after a failure, so that a dead
// node does not become a busy loop. Open-loop workers need none: the
// schedule paces them.
func (c *client) backoff(ctx context.Context) {
	t := time.NewTimer(errorBackoff)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// statusCause names a non-2xx answer: "503 unavailable" from Strata's
// error envelope, "400 grpc-3" from etcd's gateway, or the bare status.
func (c *client) statusCause(status int, body []byte) string {
	if c.etcd {
		var e struct {
			Code int `json:"code"`
		}
		if json.Unmarshal(body, &e) == nil && e.Code != 0 {
			return fmt.Sprintf("%d grpc-%d", status, e.Code)
		}
		return fmt.Sprintf("%d", status)
	}
	var env api.ErrorEnvelope
	if json.Unmarshal(body, &env) == nil && env.Error != nil && env.Error.Code != "" {
		return fmt.Sprintf("%d %s", status, env.Error.Code)
	}
	return fmt.Sprintf("%d", status)
}

// countRejected counts the events a batch answer reports rejected, and
// records them by code. Job submits and etcd puts carry no per-event
// results.
func (c *client) countRejected(body []byte) int {
	// The load generator shares the cores of the cluster it measures:
	// decoding every answer (1 ms for 1,000 results) only to find none
	// rejected would take CPU from it.
	if c.etcd || c.gen.s.workload == WorkloadJobSubmit || !bytes.Contains(body, []byte(`"rejected"`)) {
		return 0
	}
	var br api.BatchResponse
	if json.Unmarshal(body, &br) != nil {
		return 0
	}
	n := 0
	for _, r := range br.Results {
		if r.Outcome != "rejected" {
			continue
		}
		n++
		code := "rejected"
		if r.Error != nil && r.Error.Code != "" {
			code = r.Error.Code
		}
		c.rejected[code]++
	}
	return n
}

// transportCause names a failure below HTTP without the addresses that
// would make every node's failures a cause of their own.
func transportCause(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed"
	}
	return "transport error"
}
