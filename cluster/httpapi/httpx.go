package httpapi

import (
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/transport/gossip"
)

// The HTTP edge the handlers of this package share (cluster/internal/httpx).
type APIError = httpx.APIError

const (
	MaxRequestBytes     = httpx.MaxRequestBytes
	CodeBadRequest      = httpx.CodeBadRequest
	CodeTooLarge        = httpx.CodeTooLarge
	CodeUnauthenticated = httpx.CodeUnauthenticated
	CodeForbidden       = httpx.CodeForbidden
	CodeNotFound        = httpx.CodeNotFound
	CodeConflict        = httpx.CodeConflict
	CodeUnavailable     = httpx.CodeUnavailable
	CodeTimeout         = httpx.CodeTimeout
	CodeInternal        = httpx.CodeInternal
)

var (
	badRequest        = httpx.BadRequest
	writeError        = httpx.WriteError
	writeJSON         = httpx.WriteJSON
	decodeJSON        = httpx.DecodeJSON
	decodeOne         = httpx.DecodeOne
	tooLarge          = httpx.TooLarge
	decodeStrictBytes = httpx.DecodeBytes
	jsonError         = httpx.JSONError
)

// Role is the node's role (gossip's role type).
type Role = gossip.Role

// Node roles.
const (
	RoleGate    = gossip.RoleGate
	RoleManager = gossip.RoleManager
)
