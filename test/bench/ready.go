package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Health checks.
const (
	strataHealthPath = "/readyz"
	etcdHealthPath   = "/health"
	// readyPollInterval is the pause between two rounds of health checks.
	readyPollInterval = 200 * time.Millisecond
	// maxHealthBytes bounds a health answer read.
	maxHealthBytes = 64 << 10
)

// waitReady polls every base URL's health check until all pass or wait
// has passed; the error names the addresses still not ready and why.
func waitReady(ctx context.Context, hc *http.Client, target string, bases []string, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	pending := map[string]string{} // base URL → why it is not ready
	for _, b := range bases {
		pending[b] = "not checked"
	}
	tick := time.NewTicker(readyPollInterval)
	defer tick.Stop()
	for {
		for b := range pending {
			if why := healthy(ctx, hc, target, b); why == "" {
				delete(pending, b)
			} else {
				pending[b] = why
			}
		}
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v: %v", wait, pending)
		case <-tick.C:
		}
	}
}

// healthy returns "" if base passes its health check, else why not.
func healthy(ctx context.Context, hc *http.Client, target, base string) string {
	path := strataHealthPath
	if target == TargetEtcd {
		path = etcdHealthPath
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return err.Error()
	}
	resp, err := hc.Do(req)
	if err != nil {
		return transportCause(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxHealthBytes))
	switch {
	case resp.StatusCode/100 != 2:
		return resp.Status
	case target == TargetEtcd && !bytes.Contains(body, []byte(`"health":"true"`)):
		return "etcd reports " + string(bytes.TrimSpace(body))
	}
	return ""
}
