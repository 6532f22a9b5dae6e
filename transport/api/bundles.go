package api

import (
	"context"
	"strconv"

	"encoding/json"
	"fmt"
	"github.com/strata-ledger/strata/bundle"
	"io"
	"net/http"
	"net/url"
)

// ImportResponse is the answer of POST /v1/import: what the bundle held
// and, unless verify_only, what applying it did.
type ImportResponse struct {
	Tenant   string `json:"tenant"`
	BundleID string `json:"bundle_id"`
	Entries  uint64 `json:"entries"`
	Verified bool   `json:"verified"`
	// Signers are the key ids that signed the manifest; Trusted is false
	// here (the API has no trusted key yet: verify offline with --pubkey).
	Signers []string `json:"signers,omitempty"`
	// Checkpoints is how many of the bundle's checkpoints verified (root,
	// links, count, and signature against the keys the bundle carries).
	Checkpoints uint64 `json:"checkpoints"`
	// Forced lists the verification failures force skipped.
	Forced     string `json:"forced,omitempty"`
	Applied    int    `json:"applied"`
	Duplicates int    `json:"duplicates"`
	Absorbed   int    `json:"absorbed"`
	Rejected   int    `json:"rejected"`
}

// Export streams tenant's chain as a bundle ("bundle") or NDJSON
// ("ndjson") into dst (GET /v1/export), from the first address that
// answers; it returns the bytes written. A cut stream is an error (and a
// bundle cut short does not verify).
func (c *Client) Export(ctx context.Context, tenant, format string, dst io.Writer) (int64, error) {
	return c.ExportRange(ctx, tenant, format, "", "", dst)
}

// ExportRange is Export of the HLC range fromHLC..toHLC (inclusive;
// either may be empty: no bound), as GET /v1/export's from_hlc and
// to_hlc take them (bundle.ParseRange).
func (c *Client) ExportRange(ctx context.Context, tenant, format, fromHLC, toHLC string, dst io.Writer) (int64, error) {
	if err := checkID("tenant", tenant); err != nil {
		return 0, err
	}
	q := url.Values{"tenant": {tenant}}
	if format != "" {
		q.Set("format", format)
	}
	if fromHLC != "" {
		q.Set("from_hlc", fromHLC)
	}
	if toHLC != "" {
		q.Set("to_hlc", toHLC)
	}
	resp, err := c.stream(ctx, http.MethodGet, "/v1/export?"+q.Encode(), nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return io.Copy(dst, resp.Body)
}

// Import sends a bundle to POST /v1/import (operator scope); verifyOnly
// checks it without applying, force skips a manifest or signature
// failure (never a broken entry or a body conflict).
func (c *Client) Import(ctx context.Context, bundle io.Reader, verifyOnly, force bool) (*ImportResponse, error) {
	return c.ImportWith(ctx, bundle, ImportOptions{VerifyOnly: verifyOnly, Force: force})
}

// ImportOptions are POST /v1/import's parameters.
type ImportOptions struct {
	VerifyOnly, Force bool
	// PublicKey, if set, must have signed the bundle (the pubkey
	// parameter): base64 or hex of the 32 bytes of an ed25519 key.
	PublicKey string
}

// ImportWith is Import with every parameter.
func (c *Client) ImportWith(ctx context.Context, bundle io.Reader, o ImportOptions) (*ImportResponse, error) {
	q := url.Values{}
	if o.VerifyOnly {
		q.Set("verify_only", "true")
	}
	if o.Force {
		q.Set("force", "true")
	}
	if o.PublicKey != "" {
		q.Set("pubkey", o.PublicKey)
	}
	resp, err := c.stream(ctx, http.MethodPost, "/v1/import?"+q.Encode(), bundle)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out ImportResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, MaxResponseBytes)).Decode(&out); err != nil {
		return nil, fmt.Errorf("import: decode the answer: %w", err)
	}
	return &out, nil
}

// stream sends one request to the preferred address without the
// client's timeout or failover (a stream cannot be replayed) and returns
// the response of a 2xx status; others are decoded as API errors.
func (c *Client) stream(ctx context.Context, method, pathQuery string, body io.Reader) (*http.Response, error) {
	base := c.bases[int(c.preferred.Load())%len(c.bases)]
	req, err := http.NewRequestWithContext(ctx, method, base+pathQuery, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	hc := *c.hc
	hc.Timeout = 0 // a stream takes as long as it takes; ctx bounds it
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, base, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes))
		return nil, DecodeError(resp.StatusCode, raw)
	}
	return resp, nil
}

// Snapshot headers (GET /v1/snapshot).
const (
	HeaderSnapshotGroup = "Strata-Snapshot-Group"
	HeaderSnapshotNode  = "Strata-Snapshot-Node"
)

// Snapshot streams the answering node's ledger snapshot into dst (GET
// /v1/snapshot, operator scope) and returns the group it is of.
func (c *Client) Snapshot(ctx context.Context, dst io.Writer) (group string, n int64, err error) {
	resp, err := c.stream(ctx, http.MethodGet, "/v1/snapshot", nil)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	n, err = io.Copy(dst, resp.Body)
	return resp.Header.Get(HeaderSnapshotGroup), n, err
}

// RestoreResponse is the answer of POST /v1/snapshot.
type RestoreResponse struct {
	Group         string `json:"group"`
	SnapshotIndex uint64 `json:"snapshot_index"`
	Digest        string `json:"digest"`
}

// RestoreSnapshot has the answering node's group take on a snapshot
// (POST /v1/snapshot, operator scope, at the group's leader): disaster
// recovery, the group's writes since the snapshot are gone.
func (c *Client) RestoreSnapshot(ctx context.Context, snapshot io.Reader) (*RestoreResponse, error) {
	resp, err := c.stream(ctx, http.MethodPost, "/v1/snapshot", snapshot)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out RestoreResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, MaxResponseBytes)).Decode(&out); err != nil {
		return nil, fmt.Errorf("restore: decode the answer: %w", err)
	}
	return &out, nil
}

// CheckpointList is one page of GET /v1/chain/checkpoints: the checkpoint
// of every complete batch of a tenant's chain; Next is the after= of the
// next page (0: none).
type CheckpointList struct {
	Checkpoints []bundle.SignedCheckpoint `json:"checkpoints"`
	Next        uint64                    `json:"next,omitempty"`
	// Open is the open batch's checkpoint as it stands (fewer than
	// bundle.CheckpointEvents entries), on the last page: recent entries
	// are provable at once, not only once their batch fills. It changes
	// with every entry; the complete batch's checkpoint replaces it.
	Open *bundle.SignedCheckpoint `json:"open,omitempty"`
}

// ChainProof reads the inclusion proof of entry seq of tenant's chain in
// its batch's checkpoint (GET /v1/chain/proof). Check it with
// bundle.VerifyProof: it needs nothing else.
func (c *Client) ChainProof(ctx context.Context, tenant string, seq uint64, ro ReadOptions) (*bundle.Proof, ResponseMeta, error) {
	if err := checkID("tenant", tenant); err != nil {
		return nil, ResponseMeta{}, err
	}
	q, err := readQuery(ro)
	if err != nil {
		return nil, ResponseMeta{}, err
	}
	q.Set("tenant", tenant)
	q.Set("seq", strconv.FormatUint(seq, 10))
	var out bundle.Proof
	meta, err := c.do(ctx, c.read("/v1/chain/proof", q, ro), &out)
	return result(&out, meta, err)
}

// ChainProofOfEvent is ChainProof of the entry of event id.
func (c *Client) ChainProofOfEvent(ctx context.Context, tenant, id string, ro ReadOptions) (*bundle.Proof, ResponseMeta, error) {
	if err := checkID("tenant", tenant); err != nil {
		return nil, ResponseMeta{}, err
	}
	if err := checkID("event", id); err != nil {
		return nil, ResponseMeta{}, err
	}
	q, err := readQuery(ro)
	if err != nil {
		return nil, ResponseMeta{}, err
	}
	q.Set("tenant", tenant)
	q.Set("event", id)
	var out bundle.Proof
	meta, err := c.do(ctx, c.read("/v1/chain/proof", q, ro), &out)
	return result(&out, meta, err)
}
