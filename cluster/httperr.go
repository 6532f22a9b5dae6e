package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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
	CodeInternal        = api.CodeInternal
)

func badRequest(format string, args ...any) *APIError {
	return &APIError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: fmt.Sprintf(format, args...)}
}

// writeError renders err as the envelope; errors that are not *APIError
// become 500s with their message.
func writeError(w http.ResponseWriter, err error) {
	var ae *APIError
	if !errors.As(err, &ae) {
		ae = &APIError{Status: http.StatusInternalServerError, Code: CodeInternal, Message: err.Error()}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ae.Status)
	_ = json.NewEncoder(w).Encode(api.ErrorEnvelope{Error: ae})
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decodeJSON reads exactly one JSON value of at most limit bytes into v,
// refusing unknown fields and trailing data. An oversized body is a 413 that
// names the limit.
func decodeJSON(r *http.Request, limit int64, v any) error {
	if r.ContentLength > limit {
		return tooLarge(limit)
	}
	return decodeOne(http.MaxBytesReader(nil, r.Body, limit), limit, v)
}

// decodeOne reads exactly one JSON value from rd into v, refusing unknown
// fields and anything after it but whitespace (a closing bracket too).
func decodeOne(rd io.Reader, limit int64, v any) error {
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, limit)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return jsonError(err, limit)
		}
		return badRequest("request body holds more than one JSON value")
	}
	return nil
}

func tooLarge(limit int64) *APIError {
	return &APIError{
		Status:  http.StatusRequestEntityTooLarge,
		Code:    CodeTooLarge,
		Message: fmt.Sprintf("request body exceeds the limit of %d bytes", limit),
		Details: map[string]any{"limit_bytes": limit},
	}
}

func jsonError(err error, limit int64) *APIError {
	var mbe *http.MaxBytesError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		return tooLarge(limit)
	case errors.Is(err, io.EOF):
		return badRequest("request body is empty")
	case errors.As(err, &se):
		return badRequest("malformed JSON at byte %d: %v", se.Offset, err)
	case errors.As(err, &te):
		return badRequest("field %q: want %s, got %s", te.Field, te.Type, te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return badRequest("%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return badRequest("malformed JSON: %v", err)
}
