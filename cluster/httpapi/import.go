package httpapi

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/strata-ledger/strata/bundle"
	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// POST /v1/import[?verify_only=true][&force=true|&pubkey=KEY] (issue 15,
// operator): a
// bundle (GET /v1/export, strata bundle merge) verified, then applied
// through the ledger's normal idempotent apply in HLC total order. The
// body streams to a temporary file (at most MaxImportBytes) and is read
// twice: verified whole, then applied. Before anything is applied every
// event is checked against the ledger: one the ledger holds with other
// content is a body conflict (409, naming it) and nothing of the bundle
// is applied; one it holds the same is a duplicate. force skips a
// manifest or signature failure, never a broken entry or a conflict.
// pubkey (an ed25519 public key, base64 or hex of its 32 bytes) requires
// the bundle's seal to carry a valid signature by that key: without it a
// bundle re-signed by anyone passes, its signatures being checked only
// against the keys it carries. An unsigned or otherwise signed bundle is
// refused with 403 and nothing is applied; pubkey excludes force.

const (
	// MaxImportBytes bounds one import's body.
	MaxImportBytes = 256 << 20
	// MaxImportEvents bounds the events of one import: they are sorted in
	// memory before they are applied.
	MaxImportEvents = 100_000
	// importBatchEvents is the events one pipeline submit of an import
	// carries.
	importBatchEvents = 500
	// maxImportDuration bounds reading and applying one import.
	maxImportDuration = 30 * time.Minute
)

func (sv *Server) handleImport(w http.ResponseWriter, r *http.Request, c *call) {
	q := r.URL.Query()
	verifyOnly, err1 := parseBoolParam(q.Get("verify_only"))
	force, err2 := parseBoolParam(q.Get("force"))
	trusted, err3 := parsePublicKeyParam(q.Get("pubkey"))
	if err := errors.Join(err1, err2, err3); err != nil {
		httpx.WriteError(w, httpx.BadRequest("%v", err))
		return
	}
	if force && trusted != nil {
		// A forced manifest failure stops Verify before the seal's
		// signatures are opened: the key would go unchecked.
		httpx.WriteError(w, httpx.BadRequest("force and pubkey exclude each other: a forced import may skip the signature check the key asks for"))
		return
	}
	f, size, done, ok := sv.spoolUpload(w, r, MaxImportBytes, maxImportDuration)
	if !ok {
		return
	}
	defer done()
	start := time.Now()
	defer func() { sv.bundles.importSeconds.Observe(time.Since(start).Seconds()) }()
	sv.bundles.bytesIn.Add(float64(size))
	var events []fsm.StoredEvent // with the body hashes the bundle verified
	rep, verr := bundle.Verify(io.NewSectionReader(f, 0, size), bundle.VerifyConfig{PublicKey: trusted, OnEntry: func(e *bundle.Entry) error {
		if len(events) == MaxImportEvents {
			return &httpx.APIError{Status: http.StatusRequestEntityTooLarge, Code: httpx.CodeTooLarge,
				Message: fmt.Sprintf("a bundle of more than %d events: import it in parts", MaxImportEvents),
				Details: map[string]any{"limit": MaxImportEvents}}
		}
		events = append(events, *e.Stored)
		return nil
	}})
	out := api.ImportResponse{Tenant: rep.Manifest.Tenant, BundleID: rep.Manifest.BundleID, Entries: rep.Entries, Signers: rep.Signers,
		Checkpoints: rep.Checkpoints}
	if verr != nil {
		var ae *httpx.APIError
		var be *bundle.BreakError
		switch {
		case errors.As(verr, &ae):
			httpx.WriteError(w, ae)
			return
		case trusted != nil && errors.As(verr, &be) && (be.Part == bundle.PartSignature || be.Field == "signature"):
			sv.bundles.imported.WithLabelValues("refused").Inc()
			httpx.WriteError(w, &httpx.APIError{Status: http.StatusForbidden, Code: httpx.CodeForbidden,
				Message: "the bundle is not signed by the required key " + bundle.KeyID(trusted) + ": " + verr.Error(),
				Details: map[string]any{"part": be.Part, "index": be.Index, "seq": be.Seq, "field": be.Field, "key_id": bundle.KeyID(trusted)}})
			return
		case force && errors.As(verr, &be) && (be.Part == bundle.PartManifest || be.Part == bundle.PartSignature) && rep.Entries == uint64(len(events)):
			out.Forced = verr.Error()
		case errors.As(verr, &be):
			sv.bundles.imported.WithLabelValues("refused").Inc()
			httpx.WriteError(w, &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest, Message: verr.Error(),
				Details: map[string]any{"part": be.Part, "index": be.Index, "seq": be.Seq, "field": be.Field}})
			return
		default:
			httpx.WriteError(w, httpx.BadRequest("import: %v", verr))
			return
		}
	}
	out.Verified = out.Forced == ""
	if verifyOnly {
		sv.bundles.imported.WithLabelValues("verified").Inc()
		httpx.WriteJSON(w, http.StatusOK, out)
		return
	}
	if err := sv.importEvents(r, events, &out); err != nil {
		result := "refused"
		var ae *httpx.APIError
		if errors.As(err, &ae) && ae.Status == http.StatusConflict {
			result = "conflict"
			sv.bundles.conflicts.WithLabelValues(conflictBody).Inc()
		}
		sv.bundles.imported.WithLabelValues(result).Inc()
		httpx.WriteError(w, err)
		return
	}
	sv.bundles.imported.WithLabelValues("applied").Inc()
	sv.bundles.entries.Add(float64(out.Entries))
	sv.bundles.duplicates.Add(float64(out.Duplicates))
	sv.bundles.conflicts.WithLabelValues(conflictRejected).Add(float64(out.Rejected))
	sv.bundles.conflicts.WithLabelValues(conflictAbsorbed).Add(float64(out.Absorbed))
	httpx.WriteJSON(w, http.StatusOK, out)
}

// importEvents checks every event against the ledger (a body conflict
// refuses the whole bundle), then applies the others in HLC total order.
func (sv *Server) importEvents(r *http.Request, events []fsm.StoredEvent, out *api.ImportResponse) error {
	slices.SortFunc(events, func(a, b fsm.StoredEvent) int { return a.Key().Compare(b.Key()) })
	var fresh []fsm.Event
	err := sv.cfg.Store.View(func(tx fsm.ReadTx) error {
		for i := range events {
			e := &events[i].Event
			prev, err := tx.Event(e.Tenant, e.ID)
			if err != nil {
				return err
			}
			if prev == nil {
				fresh = append(fresh, *e)
				continue
			}
			if !fsm.SameEvent(&prev.Event, prev.BodyHash, e, events[i].BodyHash) {
				return &httpx.APIError{Status: http.StatusConflict, Code: httpx.CodeConflict,
					Message: fmt.Sprintf("event %s of the bundle differs from the one the ledger holds: nothing of the bundle was applied", e.ID),
					Details: map[string]any{"event_id": e.ID.String()}}
			}
			out.Duplicates++
		}
		return nil
	})
	if err != nil {
		return err
	}
	batches, err := sv.prepareImport(fresh)
	if err != nil {
		return err
	}
	submitted := 0
	for _, batch := range batches {
		res, err := sv.cfg.Writer.Submit(r.Context(), batch, commit.DurabilityGlobal)
		if err != nil {
			return partialImport(submitError(err, res, sv.cfg.NodeID), submitted, len(fresh))
		}
		submitted += len(batch)
		for _, rs := range res.Results {
			switch rs.Outcome {
			case fsm.OutcomeApplied:
				out.Applied++
			case fsm.OutcomeDuplicate:
				out.Duplicates++
			case fsm.OutcomeAbsorbed:
				out.Absorbed++
			default:
				out.Rejected++
			}
		}
	}
	return nil
}

// prepareImport stamps (Stamper.Received: an HLC too far ahead is an
// error) and encodes (the pipeline's own validation, fsm.EncodeBatch)
// every batch of fresh before the first is submitted, so that every
// refusal that can be known up front leaves the ledger untouched. A
// refusal may have moved this node's clock past the events before it,
// which is harmless: the clock only ever moves forward.
func (sv *Server) prepareImport(fresh []fsm.Event) ([][]fsm.Event, error) {
	var batches [][]fsm.Event
	for start := 0; start < len(fresh); start += importBatchEvents {
		batch := fresh[start:min(start+importBatchEvents, len(fresh))]
		for i := range batch {
			if err := sv.cfg.Stamper.Received(&batch[i]); err != nil {
				return nil, httpx.BadRequest("event %s: hlc: %v: nothing of the bundle was applied", batch[i].ID, err)
			}
		}
		if _, err := fsm.EncodeBatch(batch); err != nil {
			return nil, eventError(fmt.Errorf("%w: %w", group.ErrInvalidBatch, err))
		}
		batches = append(batches, batch)
	}
	return batches, nil
}

// partialImport says, on a submit that failed after earlier batches
// were committed, how many events are in: those stay applied, and
// importing the bundle again completes it (apply is idempotent by event
// id, so what is in counts as duplicates).
func partialImport(err error, submitted, total int) error {
	var ae *httpx.APIError
	if submitted == 0 || !errors.As(err, &ae) {
		return err
	}
	cp := *ae
	cp.Message = fmt.Sprintf("%s (%d of the bundle's %d new events were committed before this failure and stay; import the bundle again to complete it)",
		ae.Message, submitted, total)
	cp.Details = map[string]any{"committed": submitted, "events": total}
	for k, v := range ae.Details {
		cp.Details[k] = v
	}
	return &cp
}

// spoolUpload gives an upload (a bundle, a snapshot) d to arrive and be
// answered, and copies its body to a temporary file of at most limit
// bytes; done removes the file. On false the error is written.
func (sv *Server) spoolUpload(w http.ResponseWriter, r *http.Request, limit int64, d time.Duration) (f *os.File, size int64, done func(), ok bool) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
	sv.extendWriteDeadline(w, d)
	f, size, err := spoolBody(r, limit)
	done = func() {
		if f != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}
	if err != nil {
		done()
		httpx.WriteError(w, err)
		return nil, 0, nil, false
	}
	return f, size, done, true
}

// spoolBody copies the request body to a temporary file, at most limit
// bytes (413 beyond), and returns it with its size.
func spoolBody(r *http.Request, limit int64) (*os.File, int64, error) {
	f, err := os.CreateTemp("", "strata-import-*.bundle")
	if err != nil {
		return nil, 0, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable, Message: "import: " + err.Error()}
	}
	n, err := io.Copy(f, io.LimitReader(r.Body, limit+1))
	switch {
	case err != nil:
		return f, 0, bodyReadError(err)
	case n > limit:
		return f, 0, httpx.TooLarge(limit)
	}
	return f, n, nil
}

// parsePublicKeyParam reads the pubkey query parameter: an ed25519
// public key as 64 hex digits or base64 (standard or URL alphabet, padded
// or not) of its 32 bytes; "" is none.
func parsePublicKeyParam(s string) (ed25519.PublicKey, error) {
	if s == "" {
		return nil, nil
	}
	if len(s) == 2*ed25519.PublicKeySize {
		if b, err := hex.DecodeString(s); err == nil {
			return ed25519.PublicKey(b), nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == ed25519.PublicKeySize {
			return ed25519.PublicKey(b), nil
		}
	}
	return nil, fmt.Errorf("pubkey: want an ed25519 public key as 64 hex digits or base64 of 32 bytes")
}

func parseBoolParam(s string) (bool, error) {
	if s == "" {
		return false, nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%q is not a boolean", s)
	}
	return v, nil
}
