package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"sync"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
)

// Decoding a submit's body (POST /v1/jobs) on the request path (issue 19):
// the usual spec, the form strata bench and the CLI send, takes fsm's
// one-pass event reader (fsm.ReadEventsJSON) instead of encoding/json's
// reflection, and everything else takes httpx.DecodeJSON as before, which
// decides and explains. The reader reads events, so the body is read into
// a pooled buffer between the JSON of an event around it,
//
//	[{"type":"JobCreated","body":{"spec":BODY}}]
//
// and the spec is the event's. The reader takes only what encoding/json
// decodes the same way (exact-case keys, each once, no nulls), so both
// paths accept and refuse alike and decode the same spec
// (FuzzDecodeSubmitMatchesStandard).

// The JSON around a submit's body.
const (
	specEventPrefix = `[{"type":"JobCreated","body":{"spec":`
	specEventSuffix = `}}]`
)

// maxPooledBodyBytes bounds the body buffers kept for reuse; a larger
// body's buffer is left to the GC.
const maxPooledBodyBytes = 64 << 10

// specBufs are reused buffers of specEventPrefix, a body, specEventSuffix.
var specBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// decodeSubmit decodes a submit's body into spec with the errors of
// httpx.DecodeJSON(r, httpx.MaxRequestBytes, spec).
func decodeSubmit(r *http.Request, spec *fsm.JobSpec) error {
	n := r.ContentLength
	if n <= 0 || n > httpx.MaxRequestBytes || r.Body == nil { // unknown length, empty or too large: the standard path
		return httpx.DecodeJSON(r, httpx.MaxRequestBytes, spec)
	}
	bp := specBufs.Get().(*[]byte)
	defer putSpecBuf(bp)
	b := append((*bp)[:0], specEventPrefix...)
	b = append(b, make([]byte, n)...) // no allocation: append grows b itself
	body := b[len(specEventPrefix):]
	*bp = b
	if got, err := readFull(r.Body, body); got < len(body) {
		// What the standard decoder would have read: the same bytes,
		// then the same error.
		return httpx.DecodeOne(io.MultiReader(bytes.NewReader(body[:got]), errReader{err}), httpx.MaxRequestBytes, spec)
	}
	b = append(b, specEventSuffix...)
	*bp = b
	if s, ok := readSpec(b); ok {
		*spec = s
		return nil
	}
	return httpx.DecodeBytes(body, spec)
}

// readSpec is the spec of the event JSON b, when fsm's reader takes it
// and it is only a spec: a body that ends its value early and goes on
// with more members of the event around it is the standard decoder's to
// refuse.
func readSpec(b []byte) (fsm.JobSpec, bool) {
	events, n, ok := fsm.ReadEventsJSON(b, 1)
	if !ok || n != len(b) || len(events) != 1 {
		return fsm.JobSpec{}, false
	}
	e := &events[0]
	jc, isJob := e.Body.(*fsm.JobCreated)
	if !isJob || jc.AssignedRegions != nil || e.Type != fsm.TypeJobCreated || !e.ID.IsZero() || e.JobID != "" ||
		e.Tenant != "" || e.Region != "" || e.Node != "" || !e.HLC.IsZero() || e.Fence != 0 {
		return fsm.JobSpec{}, false
	}
	return jc.Spec, true
}

// putSpecBuf returns a buffer to specBufs unless it grew beyond
// maxPooledBodyBytes.
func putSpecBuf(bp *[]byte) {
	if cap(*bp) > maxPooledBodyBytes {
		return
	}
	*bp = (*bp)[:0]
	specBufs.Put(bp)
}

// readFull reads into b until it is full or rd fails, and returns what
// it read and the error as rd gave it (io.ReadFull would turn an early
// io.EOF into io.ErrUnexpectedEOF).
func readFull(rd io.Reader, b []byte) (int, error) {
	got := 0
	for got < len(b) {
		k, err := rd.Read(b[got:])
		got += k
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

// errReader returns err, as the body did.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
