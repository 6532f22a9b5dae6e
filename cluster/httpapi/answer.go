package httpapi

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"sync"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/transport/api"
)

// The answers of the two hot writes (issue 19, "the request path"): a
// batch's api.BatchResponse and a submit's api.SubmitJobResponse, written
// by hand into a pooled buffer instead of through encoding/json's
// reflection. The bytes are exactly encoding/json's (json.Encoder: HTML
// escaping on, a newline after the value), which TestAnswers_AreEncodingJSONs
// and FuzzAnswerString check; any value the hand encoder does not take (a
// result with an error, a string that needs escaping) goes to
// httpx.WriteJSON instead.

// maxPooledAnswerBytes bounds the buffers kept for reuse: a batch of
// thousands of events has a large answer, which is left to the GC rather
// than held by the pool.
const maxPooledAnswerBytes = 64 << 10

// answerBufs are reused answer buffers.
var answerBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// jsonContentType is the Content-Type value of every JSON answer, shared:
// net/http only reads it, and Header.Set or Add replace or copy it.
var jsonContentType = []string{"application/json"}

// writeBatchAnswer writes out with status (encoding/json when the hand
// encoder declines it).
func writeBatchAnswer(w http.ResponseWriter, status int, out *api.BatchResponse) {
	bp := answerBufs.Get().(*[]byte)
	b, ok := appendBatchResponse((*bp)[:0], out)
	if ok {
		writeJSONBytes(w, status, b)
	} else {
		httpx.WriteJSON(w, status, *out)
	}
	putAnswerBuf(bp, b)
}

// writeSubmitAnswer writes out with status (encoding/json when the hand
// encoder declines it).
func writeSubmitAnswer(w http.ResponseWriter, status int, out *api.SubmitJobResponse) {
	bp := answerBufs.Get().(*[]byte)
	b, ok := appendSubmitJobResponse((*bp)[:0], out)
	if ok {
		writeJSONBytes(w, status, b)
	} else {
		httpx.WriteJSON(w, status, *out)
	}
	putAnswerBuf(bp, b)
}

// writeJSONBytes writes status and b, a JSON answer, as httpx.WriteJSON
// does.
func writeJSONBytes(w http.ResponseWriter, status int, b []byte) {
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// putAnswerBuf returns b, grown from *bp, to the pool unless it grew
// beyond maxPooledAnswerBytes.
func putAnswerBuf(bp *[]byte, b []byte) {
	if cap(b) > maxPooledAnswerBytes {
		return
	}
	*bp = b[:0]
	answerBufs.Put(bp)
}

// appendBatchResponse appends out as encoding/json would, and a newline;
// false when it holds what the hand encoder does not take.
func appendBatchResponse(b []byte, out *api.BatchResponse) ([]byte, bool) {
	b = append(b, '{')
	b, ok := appendWriteFields(b, &out.WriteResponse)
	if !ok {
		return b, false
	}
	if len(out.Results) > 0 {
		b = append(b, `,"results":[`...)
		for i := range out.Results {
			r := &out.Results[i]
			if r.Error != nil {
				return b, false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":"`...)
			b = hex.AppendEncode(b, r.ID[:])
			b = append(b, '"')
			if r.JobID != "" {
				b = append(b, `,"job_id":`...)
				if b, ok = appendPlainString(b, r.JobID); !ok {
					return b, false
				}
			}
			b = append(b, `,"outcome":`...)
			if b, ok = appendPlainString(b, r.Outcome); !ok {
				return b, false
			}
			if r.Seq != 0 {
				b = append(b, `,"seq":`...)
				b = strconv.AppendUint(b, r.Seq, 10)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, "}\n"...), true
}

// appendSubmitJobResponse appends out as encoding/json would, and a
// newline; false when it holds what the hand encoder does not take.
func appendSubmitJobResponse(b []byte, out *api.SubmitJobResponse) ([]byte, bool) {
	b = append(b, `{"job_id":`...)
	b, ok := appendPlainString(b, out.JobID)
	if !ok {
		return b, false
	}
	b = append(b, ',')
	if b, ok = appendWriteFields(b, &out.WriteResponse); !ok {
		return b, false
	}
	if out.Existing {
		b = append(b, `,"existing":true`...)
	}
	if out.Queued {
		b = append(b, `,"queued":true`...)
	}
	for _, f := range [...]struct{ key, val string }{
		{`,"status":`, out.Status}, {`,"queued_by":`, out.QueuedBy}, {`,"next_eligible_at":`, out.NextEligibleAt},
	} {
		if f.val == "" {
			continue
		}
		b = append(b, f.key...)
		if b, ok = appendPlainString(b, f.val); !ok {
			return b, false
		}
	}
	return append(b, "}\n"...), true
}

// appendWriteFields appends the members of an api.WriteResponse (no
// braces).
func appendWriteFields(b []byte, wr *api.WriteResponse) ([]byte, bool) {
	b = append(b, `"durability":`...)
	b, ok := appendPlainString(b, wr.Durability)
	if !ok {
		return b, false
	}
	b = append(b, `,"hlc":`...)
	b = appendHLC(b, wr.HLC)
	for _, f := range [...]struct{ key, val string }{{`,"session":`, wr.Session}, {`,"write":`, wr.Write}} {
		if f.val == "" {
			continue
		}
		b = append(b, f.key...)
		if b, ok = appendPlainString(b, f.val); !ok {
			return b, false
		}
	}
	return b, true
}

// appendHLC appends ts as its JSON string (digits and colons: nothing to
// escape).
func appendHLC(b []byte, ts hlc.Timestamp) []byte {
	b = append(b, '"')
	b = ts.AppendText(b)
	return append(b, '"')
}

// appendPlainString appends s quoted when encoding/json writes it as it
// is: printable ASCII but the quote, the backslash and the HTML-escaped
// <, > and &. False for anything else (the caller falls back).
func appendPlainString(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}
