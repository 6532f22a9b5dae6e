package api

import (
	"bytes"
	_ "embed" // the OpenAPI document
)

// The OpenAPI 3.1 document of the HTTP API v1 (DESIGN §9): every public
// route (/v1/*, /livez, /readyz, /metrics; not the nodes' /internal/*
// calls or pprof), its parameters, bodies, answers and errors. It is
// written by hand next to this file and built into the binary; nodes serve
// it without a token at OpenAPIPath and WellKnownOpenAPIPath, and `strata
// openapi` prints it. Tests keep it honest: cluster/httpapi's fails when a
// route and the document disagree, and cluster's validates real answers
// against it.

//go:embed openapi.json
var openAPIDocument []byte

// Where nodes serve the document.
const (
	OpenAPIPath          = "/v1/openapi.json"
	WellKnownOpenAPIPath = "/.well-known/openapi"
)

// OpenAPI returns a copy of the OpenAPI 3.1 document (JSON).
func OpenAPI() []byte { return bytes.Clone(openAPIDocument) }
