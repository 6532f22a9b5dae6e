package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-ledger/strata/transport/api"
)

const (
	// maxLoadOps bounds the requests of one background load.
	maxLoadOps = 5000
	// loadRequestTimeout bounds one request of the load.
	loadRequestTimeout = 10 * time.Second
)

// bgLoad is a client that submits jobs and reads them back, one request
// at a time, in a goroutine, while a test changes the cluster's security
// material under it. Every request opens a new connection (no
// keep-alive), so each one makes a TLS handshake with the certificate the
// node serves at that moment. Submits go to gates and managers (a
// manager forwards to a gate over node-to-node TLS); reads are strong
// and made on another node than the submit (forwarded to the leader).
type bgLoad struct {
	c       *testCluster
	name    string   // prefixes the idempotency keys
	submit  []string // nodes submits go to, in turn
	read    []string // nodes reads go to, in turn
	hc      *http.Client
	ops     atomic.Int64
	stopped chan struct{}
	done    chan struct{}

	mu       sync.Mutex
	failures []string
}

// startLoad starts a load named name (unique in the cluster: it keys the
// submits); stop ends it.
func (c *testCluster) startLoad(name string, submit, read []string) *bgLoad {
	c.t.Helper()
	tr := c.http.Transport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	l := &bgLoad{c: c, name: name, submit: submit, read: read, hc: &http.Client{Transport: tr, Timeout: loadRequestTimeout},
		stopped: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	return l
}

func (l *bgLoad) run() {
	defer close(l.done)
	for i := 0; i < maxLoadOps/2; i++ {
		select {
		case <-l.stopped:
			return
		default:
		}
		id, err := l.submitOne(l.submit[i%len(l.submit)], fmt.Sprintf("%s-%d", l.name, i))
		if err == nil {
			err = l.readOne(l.read[i%len(l.read)], id)
		}
		if err != nil {
			l.mu.Lock()
			l.failures = append(l.failures, fmt.Sprintf("op %d: %v", i, err))
			l.mu.Unlock()
		}
	}
}

func (l *bgLoad) submitOne(node, key string) (string, error) {
	status, body, err := l.do(node, "POST", "/v1/jobs", jobBody("acme", key, "10m"))
	if err != nil {
		return "", err
	}
	var sub api.SubmitJobResponse
	if status != http.StatusCreated || json.Unmarshal(body, &sub) != nil || sub.JobID == "" {
		return "", fmt.Errorf("submit on %s: %d %.300s", node, status, body)
	}
	return sub.JobID, nil
}

func (l *bgLoad) readOne(node, jobID string) error {
	status, body, err := l.do(node, "GET", "/v1/jobs/"+jobID+"?consistency=strong", nil)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("read %s on %s: %d %.300s", jobID, node, status, body)
	}
	return nil
}

// do sends one request and counts it, whatever its outcome.
func (l *bgLoad) do(node, method, path string, body []byte) (int, []byte, error) {
	defer l.ops.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), loadRequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, l.c.scheme+"://"+l.c.cfg(node).HTTPAddr+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+testAcmeToken)
	resp, err := l.hc.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s on %s: %w", method, path, node, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

// advance waits until the load made n more requests than it had, so a
// step of the test is followed by requests made after it.
func (l *bgLoad) advance(n int64) {
	l.c.t.Helper()
	target := l.ops.Load() + n
	if target > maxLoadOps {
		l.c.t.Fatalf("the load would pass its bound of %d requests", maxLoadOps)
	}
	l.c.waitFor(fmt.Sprintf("%d requests of the load", target), func() bool { return l.ops.Load() >= target })
}

// stop ends the load and returns how many requests it made and the
// failed ones.
func (l *bgLoad) stop() (int64, []string) {
	close(l.stopped)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ops.Load(), l.failures
}
