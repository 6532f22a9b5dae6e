package api

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// Client defaults and bounds.
const (
	// DefaultTimeout bounds one attempt of a call on one node: long enough
	// for a GLOBAL write across regions or a session read that waits.
	DefaultTimeout = 30 * time.Second
	// MaxIdleConnsPerHost keeps one connection per concurrent caller alive
	// between calls, so a benchmark with 256 callers reuses connections
	// instead of dialing (and exhausting ephemeral ports).
	MaxIdleConnsPerHost = 512
	// MaxAddrs bounds the addresses of a client; a call tries each once.
	MaxAddrs = 64
	// dialTimeout bounds a dial, so a black-holed node (a partition, a
	// dead host) costs seconds before the next address is tried.
	dialTimeout = 5 * time.Second
	// idleConnTimeout closes pooled connections nobody used for a while.
	idleConnTimeout = 90 * time.Second
)

// Errors of a call that no node answered; callers branch on them with
// errors.Is. A call a node answered with a non-2xx status returns *Error.
var (
	// ErrUnreachable: every address failed at the connection level.
	ErrUnreachable = errors.New("no node answered")
	// ErrOutcomeUnknown: the connection broke after a request that is not
	// safe to repeat (a submit without an idempotency key, a leadership
	// transfer) was sent; it may or may not have taken effect.
	ErrOutcomeUnknown = errors.New("connection lost after the request was sent; it may have taken effect")
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// Addrs are the nodes' API addresses, "host:port" or
	// "http(s)://host:port", in order of preference. A call goes to the
	// node that answered last and moves on to the next address when a
	// connection fails, so a dead node does not fail calls that other
	// nodes can serve.
	Addrs []string
	// Token is sent as "Authorization: Bearer Token" when not empty.
	Token string
	// HTTPClient, when set, is used as is (its own pool and timeouts);
	// by default the client builds one that pools MaxIdleConnsPerHost
	// connections per node.
	HTTPClient *http.Client
	// Timeout bounds one attempt on one node, including reading the
	// response; 0 means DefaultTimeout. The caller's context bounds the
	// whole call.
	Timeout time.Duration
	// TLS, when set, is the client's TLS config (the cluster CA as
	// RootCAs, a client certificate if the operator has one): addresses
	// without a scheme are then https://, and the default HTTP client
	// uses it.
	TLS *tls.Config
}

// Client calls the HTTP API v1 of a Strata cluster. It is safe for
// concurrent use; build one per process and share it.
type Client struct {
	bases   []string // normalized base URLs: scheme://host:port
	token   string
	hc      *http.Client
	timeout time.Duration
	// preferred is the index of the address that answered last; calls
	// start there, so failover is paid once, not on every call.
	preferred atomic.Uint32
}

// New checks cfg and builds a Client.
func New(cfg ClientConfig) (*Client, error) {
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("api client: no address given")
	}
	if len(cfg.Addrs) > MaxAddrs {
		return nil, fmt.Errorf("api client: %d addresses, over the limit of %d", len(cfg.Addrs), MaxAddrs)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("api client: negative timeout %s", cfg.Timeout)
	}
	if strings.ContainsAny(cfg.Token, " \t\r\n") {
		return nil, errors.New("api client: token contains white space")
	}
	c := &Client{token: cfg.Token, hc: cfg.HTTPClient, timeout: cfg.Timeout}
	scheme := "http"
	if cfg.TLS != nil {
		scheme = "https"
	}
	for _, a := range cfg.Addrs {
		base, err := normalizeAddr(a, scheme)
		if err != nil {
			return nil, fmt.Errorf("api client: %w", err)
		}
		c.bases = append(c.bases, base)
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.hc == nil {
		t := newTransport()
		t.TLSClientConfig = cfg.TLS
		c.hc = &http.Client{Transport: t}
	}
	return c, nil
}

// Addrs returns the client's base URLs in configuration order.
func (c *Client) Addrs() []string { return append([]string(nil), c.bases...) }

// newTransport is http.DefaultTransport's setup with a pool sized for many
// concurrent callers and a dial timeout that lets failover proceed.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	t.MaxIdleConns = 4 * MaxIdleConnsPerHost
	t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	t.IdleConnTimeout = idleConnTimeout
	return t
}

// normalizeAddr turns "host:port" (taking scheme) or
// "http(s)://host:port[/]" into a base URL without a trailing slash.
func normalizeAddr(a, scheme string) (string, error) {
	s := strings.TrimSpace(a)
	if !strings.Contains(s, "://") {
		s = scheme + "://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", a, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("address %q: scheme must be http or https", a)
	case u.Host == "" || u.Port() == "" && !strings.Contains(a, "://"):
		return "", fmt.Errorf("address %q: want host:port or http(s)://host:port", a)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/"):
		return "", fmt.Errorf("address %q: want only scheme, host and port", a)
	}
	return u.Scheme + "://" + u.Host, nil
}

// request describes one API call.
type request struct {
	method  string
	path    string // escaped
	query   url.Values
	body    any // nil: no body
	session string
	// retrySafe: the call may be repeated on another node even after it
	// was sent (reads, and writes that are idempotent by id or key).
	retrySafe bool
	// pinned: the call is about the node itself (health, fault rules),
	// so it goes to the first address only and never fails over.
	pinned bool
	// timeout, when set, replaces the client's per-attempt timeout
	// (long polls).
	timeout time.Duration
}

// connError is a failure below HTTP: no status was received.
type connError struct {
	addr string
	sent bool // the request was written (it may have taken effect)
	err  error
}

func (e *connError) Error() string { return e.addr + ": " + e.err.Error() }
func (e *connError) Unwrap() error { return e.err }

// do runs r against the nodes in turn until one answers, and decodes a 2xx
// body into out (when out is not nil and the body is not empty).
func (c *Client) do(ctx context.Context, r request, out any) (ResponseMeta, error) {
	var body []byte
	if r.body != nil {
		var err error
		if body, err = json.Marshal(r.body); err != nil {
			return ResponseMeta{}, fmt.Errorf("%s %s: encode request: %w", r.method, r.path, err)
		}
	}
	n, start := len(c.bases), int(c.preferred.Load())
	if r.pinned {
		n, start = 1, 0
	}
	var failures []string
	for i := range n {
		idx := (start + i) % len(c.bases)
		meta, err := c.attempt(ctx, c.bases[idx], &r, body, out)
		var ce *connError
		if !errors.As(err, &ce) {
			if !r.pinned {
				c.preferred.Store(uint32(idx))
			}
			return meta, err
		}
		if ctx.Err() != nil {
			return meta, fmt.Errorf("%s %s: %w", r.method, r.path, ctx.Err())
		}
		if ce.sent && !r.retrySafe {
			return meta, fmt.Errorf("%s %s via %s: %w (%v)", r.method, r.path, ce.addr, ErrOutcomeUnknown, ce.err)
		}
		failures = append(failures, ce.Error())
	}
	return ResponseMeta{}, fmt.Errorf("%s %s: %w: %s", r.method, r.path, ErrUnreachable, strings.Join(failures, "; "))
}

// attempt runs r once against base. Failures below HTTP come back as
// *connError; a non-2xx status as *Error.
func (c *Client) attempt(ctx context.Context, base string, r *request, body []byte, out any) (ResponseMeta, error) {
	timeout := c.timeout
	if r.timeout > 0 {
		timeout = r.timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var sent atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { sent.Store(true) },
	})
	u := base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, rd)
	if err != nil {
		return ResponseMeta{}, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if r.session != "" {
		req.Header.Set(HeaderSession, r.session)
	}
	if tp, _ := ctx.Value(traceparentKey{}).(string); tp != "" {
		req.Header.Set(HeaderTraceparent, tp)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		// The *url.Error repeats method and URL, which the caller's
		// message already names.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return ResponseMeta{Addr: base}, &connError{addr: base, sent: sent.Load(), err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return ResponseMeta{Addr: base}, &connError{addr: base, sent: true, err: fmt.Errorf("read response: %w", err)}
	}
	tooLarge := len(raw) > MaxResponseBytes
	if tooLarge {
		raw = raw[:MaxResponseBytes]
	}
	meta, metaErr := ParseResponseMeta(resp.StatusCode, resp.Header)
	meta.Addr, meta.Body = base, raw
	switch {
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return meta, DecodeError(resp.StatusCode, raw)
	case metaErr != nil:
		return meta, fmt.Errorf("%s %s from %s: %w", r.method, r.path, base, metaErr)
	case tooLarge:
		return meta, fmt.Errorf("%s %s from %s: response body exceeds the limit of %d bytes", r.method, r.path, base, MaxResponseBytes)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return meta, fmt.Errorf("%s %s from %s: decode response: %w", r.method, r.path, base, err)
		}
	}
	return meta, nil
}
