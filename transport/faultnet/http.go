package faultnet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/strata-ledger/strata/transport/api"
)

// MaxRulesBodyBytes bounds the body of a PUT of the rules. A rule is under
// 100 bytes of JSON, so 64 KiB holds several hundred peers: more than any
// test cluster has.
const MaxRulesBodyBytes = 64 << 10

// allowedMethods is the Allow header of a 405.
const allowedMethods = "GET, PUT"

// Handler serves f's rules over HTTP, as a node's /v1/debug/faults:
//
//   - GET answers 200 with Rules as JSON (durations as strings, "30ms").
//   - PUT replaces the whole rule set with the Rules in the body and answers
//     200 with the rules now in force. The body is decoded strictly: unknown
//     fields, trailing data and bodies over MaxRulesBodyBytes (413) are
//     refused. A refused body (400 or 413) leaves the rules unchanged.
//   - Any other method answers 405 with an Allow header.
//
// Errors use the API's envelope, {"error":{"code":"...","message":"..."}}.
// Handler does no authentication: the caller mounts it behind operator-scope
// auth, since it can partition the node from its peers.
func Handler(f *Faults) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, http.StatusOK, f.Rules())
		case http.MethodPut:
			rules, apiErr := decodeRules(r)
			if apiErr != nil {
				writeError(w, apiErr)
				return
			}
			if err := f.Replace(rules); err != nil {
				writeError(w, &api.Error{Status: http.StatusBadRequest, Code: api.CodeBadRequest, Message: err.Error()})
				return
			}
			writeJSON(w, http.StatusOK, f.Rules())
		default:
			w.Header().Set("Allow", allowedMethods)
			writeError(w, &api.Error{
				Status:  http.StatusMethodNotAllowed,
				Code:    api.CodeBadRequest,
				Message: fmt.Sprintf("method %s not allowed; use %s", r.Method, allowedMethods),
			})
		}
	})
}

// decodeRules reads exactly one Rules object of at most MaxRulesBodyBytes
// from r's body.
func decodeRules(r *http.Request) (Rules, *api.Error) {
	if r.ContentLength > MaxRulesBodyBytes {
		return Rules{}, tooLarge()
	}
	return decodeRulesFrom(http.MaxBytesReader(nil, r.Body, MaxRulesBodyBytes))
}

// decodeRulesFrom decodes one Rules object from body, refusing unknown
// fields and anything after the object.
func decodeRulesFrom(body io.Reader) (Rules, *api.Error) {
	var rules Rules
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rules); err != nil {
		return Rules{}, jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return Rules{}, jsonError(err)
		}
		return Rules{}, badRequest("request body holds more than one JSON value")
	}
	return rules, nil
}

func jsonError(err error) *api.Error {
	var mbe *http.MaxBytesError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		return tooLarge()
	case errors.Is(err, io.EOF):
		return badRequest("request body is empty; want rules as JSON")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("malformed JSON: body ends inside a value")
	case errors.As(err, &se):
		return badRequest("malformed JSON at byte %d: %v", se.Offset, err)
	case errors.As(err, &te):
		return badRequest("field %q: want %s, got %s", te.Field, te.Type, te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return badRequest("%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return badRequest("bad rules: %v", err)
}

func badRequest(format string, args ...any) *api.Error {
	return &api.Error{Status: http.StatusBadRequest, Code: api.CodeBadRequest, Message: fmt.Sprintf(format, args...)}
}

func tooLarge() *api.Error {
	return &api.Error{
		Status:  http.StatusRequestEntityTooLarge,
		Code:    api.CodeTooLarge,
		Message: fmt.Sprintf("request body exceeds the limit of %d bytes", MaxRulesBodyBytes),
		Details: map[string]any{"limit_bytes": MaxRulesBodyBytes},
	}
}

func writeError(w http.ResponseWriter, e *api.Error) {
	writeJSON(w, e.Status, api.ErrorEnvelope{Error: e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
