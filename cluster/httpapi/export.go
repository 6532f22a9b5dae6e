package httpapi

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"time"

	"github.com/strata-ledger/strata/bundle"
	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
)

// GET /v1/export?tenant=T&format=bundle|ndjson[&from_hlc=A][&to_hlc=B]
// (issue 15): the tenant's audit chain as this gate's ledger holds it,
// streamed from one read view: a bundle (bundle/FORMAT.md: every event
// with its seq, links and body, a checkpoint per complete batch, then a
// manifest), or NDJSON sorted by HLC with a last manifest line. The
// export is never held in memory; NDJSON, which is sorted, goes through a
// temporary file (the bundle) and sorted runs of its lines in temporary
// files past bundle.DefaultNDJSONRunBytes (16 MiB) of lines.
//
// from_hlc and to_hlc (bundle.ParseRange: inclusive, HLC total order;
// wall:logical:node or a wall clock in ms; either may be left out) make
// the bundle the contiguous sub-chain from the first to the last entry
// whose HLC is in the range (so it may start mid-chain, and may hold late
// events outside the range between them), and the NDJSON that sub-chain
// filtered to the range (bundle/FORMAT.md, "HLC ranges").

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
	rng, err := bundle.ParseRange(q.Get("from_hlc"), q.Get("to_hlc"))
	if err != nil {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: "export range: " + err.Error(), Details: map[string]any{"field": "from_hlc, to_hlc"}})
		return
	}
	sv.extendWriteDeadline(w, maxExportDuration)
	sv.bundles.exported.WithLabelValues(format).Inc()
	start := time.Now()
	defer func() { sv.bundles.exportSeconds.WithLabelValues(format).Observe(time.Since(start).Seconds()) }()
	w = countingWriter{w, sv.bundles.bytesOut}
	cfg := bundle.WriterConfig{Tenant: tenant, CreatedAt: time.Now(), CreatedBy: sv.cfg.NodeID, Signer: sv.cfg.SigningKey, Range: rng}
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
	ncfg := bundle.NDJSONConfig{Range: rng, NewRunFile: tempRunFile}
	if _, err := bundle.WriteNDJSONWith(w, bundle.Source{Name: "export", R: f, Size: size}, ncfg); err != nil {
		sv.abortStream(err)
	}
}

// tempRunFile is a sorted run of an NDJSON export's lines
// (bundle.NDJSONConfig.NewRunFile): a file in the temporary directory,
// removed from it at once, so it is gone however the export ends, and
// released on Close. Where an open file cannot be removed, it is removed
// on Close.
func tempRunFile() (bundle.RunFile, error) {
	f, err := os.CreateTemp("", "strata-export-*.run")
	if err != nil {
		return nil, err
	}
	if os.Remove(f.Name()) != nil {
		return removedOnClose{f}, nil
	}
	return f, nil
}

// removedOnClose is a run file removed when closed.
type removedOnClose struct{ *os.File }

func (f removedOnClose) Close() error {
	return errors.Join(f.File.Close(), os.Remove(f.Name()))
}

// writeBundle writes cfg.Tenant's chain from one read view: the whole
// chain, or with cfg.Range the sub-chain of the range, found by a first
// pass over the chain in the same view.
func (sv *Server) writeBundle(dst io.Writer, cfg bundle.WriterConfig) error {
	return writeExport(sv.cfg.Store, dst, cfg)
}

// writeExport is writeBundle from st: what an export holds is this and
// the HTTP response's buffers (export_heap_test.go measures it).
func writeExport(st Store, dst io.Writer, cfg bundle.WriterConfig) error {
	return st.View(func(tx fsm.ReadTx) error {
		after, last := uint64(0), uint64(math.MaxUint64)
		if cfg.Range != nil {
			var err error
			if cfg.Start, last, err = rangeEnds(tx, cfg.Tenant, cfg.Range); err != nil {
				return err
			}
			after = cfg.Start.Seq
		}
		_, err := bundle.WriteChain(dst, cfg, func(fn func(*fsm.StoredEvent) error) error {
			if last == 0 { // no event in the range: an empty bundle
				return nil
			}
			err := tx.ChainEvents(cfg.Tenant, after, func(se *fsm.StoredEvent) error {
				if err := fn(se); err != nil {
					return err
				}
				if se.Seq == last {
					return errRangeEnd
				}
				return nil
			})
			if errors.Is(err, errRangeEnd) {
				return nil
			}
			return err
		})
		return err
	})
}

// errRangeEnd stops a chain iteration at the end of an export's range.
var errRangeEnd = errors.New("end of the range")

// rangeEnds finds the sub-chain of rng in tenant's chain: the chain head
// before the first entry whose HLC is in rng (start), and the seq of the
// last such entry (0: none is).
func rangeEnds(tx fsm.ReadTx, tenant string, rng *bundle.Range) (start fsm.ChainHead, last uint64, err error) {
	var prev fsm.ChainHead
	err = tx.ChainEvents(tenant, 0, func(se *fsm.StoredEvent) error {
		if rng.Contains(se.HLC) {
			if last == 0 {
				start = prev
			}
			last = se.Seq
		}
		prev = fsm.ChainHead{Seq: se.Seq, Link: se.Link}
		return nil
	})
	return start, last, err
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
