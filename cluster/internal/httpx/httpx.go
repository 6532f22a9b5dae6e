// Package httpx holds the HTTP edge every handler of the node shares: the
// JSON error envelope (DESIGN §9), strict JSON decoding with a size limit,
// and JSON answers. It keeps no state and imports no package of the node.
package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/strata-ledger/strata/transport/api"
)

// MaxRequestBytes is the request body limit of DESIGN §13.
const MaxRequestBytes = 1 << 20

// APIError is the JSON error envelope of every failed API call:
// {"error":{"code":"...","message":"...","details":{}}} (api.Error).
type APIError = api.Error

// Error codes callers branch on (api's).
const (
	CodeBadRequest      = api.CodeBadRequest
	CodeTooLarge        = api.CodeTooLarge
	CodeUnauthenticated = api.CodeUnauthenticated
	CodeForbidden       = api.CodeForbidden
	CodeNotFound        = api.CodeNotFound
	CodeConflict        = api.CodeConflict
	CodeUnavailable     = api.CodeUnavailable
	CodeTimeout         = api.CodeTimeout
	CodeTooMany         = api.CodeTooMany
	CodeInternal        = api.CodeInternal
)

func BadRequest(format string, args ...any) *APIError {
	return &APIError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: fmt.Sprintf(format, args...)}
}

// WriteError renders err as the envelope; errors that are not *APIError
// become 500s with their message.
func WriteError(w http.ResponseWriter, err error) {
	var ae *APIError
	if !errors.As(err, &ae) {
		ae = &APIError{Status: http.StatusInternalServerError, Code: CodeInternal, Message: err.Error()}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ae.Status)
	_ = json.NewEncoder(w).Encode(api.ErrorEnvelope{Error: ae})
}

// WriteJSON writes v with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// DecodeJSON reads exactly one JSON value of at most limit bytes into v,
// refusing unknown fields and trailing data. An oversized body is a 413 that
// names the limit.
func DecodeJSON(r *http.Request, limit int64, v any) error {
	if r.ContentLength > limit {
		return TooLarge(limit)
	}
	return DecodeOne(http.MaxBytesReader(nil, r.Body, limit), limit, v)
}

// DecodeOne reads exactly one JSON value from rd into v, refusing unknown
// fields and anything after it but whitespace (a closing bracket too).
func DecodeOne(rd io.Reader, limit int64, v any) error {
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return JSONError(err, limit)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return JSONError(err, limit)
		}
		return BadRequest("request body holds more than one JSON value")
	}
	return nil
}

func TooLarge(limit int64) *APIError {
	return &APIError{
		Status:  http.StatusRequestEntityTooLarge,
		Code:    CodeTooLarge,
		Message: fmt.Sprintf("request body exceeds the limit of %d bytes", limit),
		Details: map[string]any{"limit_bytes": limit},
	}
}

// BodyTimeout is the 408 of a request body that did not arrive within
// its read deadline (the API's per-request deadlines).
func BodyTimeout() *APIError {
	return &APIError{Status: http.StatusRequestTimeout, Code: CodeTimeout,
		Message: "the request body did not arrive within its deadline"}
}

func JSONError(err error, limit int64) *APIError {
	var mbe *http.MaxBytesError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		return TooLarge(limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return BodyTimeout()
	case errors.Is(err, io.EOF):
		return BadRequest("request body is empty")
	case errors.As(err, &se):
		return BadRequest("malformed JSON at byte %d: %v", se.Offset, err)
	case errors.As(err, &te):
		return BadRequest("field %q: want %s, got %s", te.Field, te.Type, te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return BadRequest("%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return BadRequest("malformed JSON: %v", err)
}

// DecodeBytes is DecodeOne over a body already read (at most
// MaxRequestBytes): a forwarded call's body is read once, to relay it.
func DecodeBytes(b []byte, v any) error {
	return DecodeOne(bytes.NewReader(b), MaxRequestBytes, v)
}
