package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/strata-ledger/strata/bundle"
	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
)

// GET /v1/export?tenant=T&format=bundle|ndjson (issue 15): the tenant's
// audit chain as this gate's ledger holds it, streamed from one read
// view: a bundle (bundle/FORMAT.md: every event with its seq, links and
// body, then a manifest), or NDJSON sorted by HLC with a last manifest
// line. The export is never held in memory; NDJSON, which is sorted,
// goes through a temporary file.

// maxExportDuration bounds the write deadline of one export.
const maxExportDuration = time.Hour

func (sv *Server) handleExport(w http.ResponseWriter, r *http.Request, c *call) {
	q := r.URL.Query()
	tenant := q.Get("tenant")
	if !fsm.IsName(tenant) {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: "tenant is required: a name", Details: map[string]any{"field": "tenant"}})
		return
	}
	if !c.p.Allows(auth.ScopeJobsRead, tenant) {
		httpx.WriteError(w, forbidden(c.p, auth.ScopeJobsRead, tenant))
		return
	}
	format := q.Get("format")
	if format == "" {
		format = "bundle"
	}
	if format != "bundle" && format != "ndjson" {
		httpx.WriteError(w, httpx.BadRequest("format %q must be bundle or ndjson", format))
		return
	}
	if q.Get("from_hlc") != "" || q.Get("to_hlc") != "" {
		httpx.WriteError(w, httpx.BadRequest("from_hlc and to_hlc are not supported yet: an export holds the whole chain"))
		return
	}
	sv.extendWriteDeadline(w, maxExportDuration)
	sv.bundles.exported.WithLabelValues(format).Inc()
	w = countingWriter{w, sv.bundles.bytesOut}
	cfg := bundle.WriterConfig{Tenant: tenant, CreatedAt: time.Now(), CreatedBy: sv.cfg.NodeID, Signer: sv.cfg.SigningKey}
	if format == "bundle" {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", tenant+".bundle"))
		if err := sv.writeBundle(w, cfg); err != nil {
			sv.abortStream(err)
		}
		return
	}
	f, err := os.CreateTemp("", "strata-export-*.bundle")
	if err != nil {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable, Message: "export: " + err.Error()})
		return
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := sv.writeBundle(f, cfg); err != nil {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable, Message: "export: " + err.Error()})
		return
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable, Message: "export: " + err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	if _, err := bundle.WriteNDJSON(w, bundle.Source{Name: "export", R: f, Size: size}, nil); err != nil {
		sv.abortStream(err)
	}
}

// writeBundle writes cfg.Tenant's chain from one read view.
func (sv *Server) writeBundle(dst io.Writer, cfg bundle.WriterConfig) error {
	return sv.cfg.Store.View(func(tx fsm.ReadTx) error {
		_, err := bundle.WriteChain(dst, cfg, func(fn func(*fsm.StoredEvent) error) error {
			return tx.ChainEvents(cfg.Tenant, 0, fn)
		})
		return err
	})
}

// abortStream ends a streamed answer that failed after its status went
// out: the connection is cut, so the client sees a truncated body (which
// a bundle's verification refuses), never a complete-looking one.
func (sv *Server) abortStream(err error) {
	sv.log.Warn("export failed mid-stream", "err", err)
	panic(http.ErrAbortHandler)
}

// countingWriter counts the bytes of an export.
type countingWriter struct {
	http.ResponseWriter
	n interface{ Add(float64) }
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n.Add(float64(n))
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (c countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
