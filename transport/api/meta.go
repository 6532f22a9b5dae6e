package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds of what the client accepts from a server.
const (
	// MaxResponseBytes bounds one response body the client reads: a page
	// of MaxListLimit jobs fits with room to spare, and a misbehaving
	// server cannot make a client allocate without bound.
	MaxResponseBytes = 16 << 20
	// MaxMetaHeaderBytes bounds the Strata-Leader and Strata-Session
	// values (a node id is at most 64 bytes, a session token a group name
	// and an index).
	MaxMetaHeaderBytes = 256
	// errorSnippetBytes is how much of a body that is not an error
	// envelope an Error's message quotes.
	errorSnippetBytes = 200
)

// ResponseMeta is what every response says besides its body: the Strata
// headers (DESIGN §8), the HTTP status and which address answered.
type ResponseMeta struct {
	// Index is the Raft index the answering node had applied.
	Index uint64
	// LastContact is how long ago the answering node heard from its
	// group's leader (0 on the leader).
	LastContact time.Duration
	// Leader is the node id of the group's leader, empty when unknown.
	Leader string
	// Session is the token a write returns; send it back in
	// ReadOptions.Session to read your own writes.
	Session string
	// Status is the HTTP status code.
	Status int
	// Addr is the base URL of the node that answered, after failover.
	Addr string
	// Body is the raw response body (at most MaxResponseBytes), for
	// callers that print or forward it as the server sent it.
	Body []byte
}

// ParseResponseMeta reads the Strata headers of a response. Absent headers
// leave their field zero; a malformed one is an error naming the header and
// its value, since it means the server breaks the contract.
func ParseResponseMeta(status int, h http.Header) (ResponseMeta, error) {
	m := ResponseMeta{Status: status}
	if v := h.Get(HeaderIndex); v != "" {
		idx, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return m, fmt.Errorf("header %s %q: want a decimal index", HeaderIndex, clip(v))
		}
		m.Index = idx
	}
	if v := h.Get(HeaderLastContact); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < 0 || ms > int64(maxLastContact/time.Millisecond) {
			return m, fmt.Errorf("header %s %q: want milliseconds in [0, %d]", HeaderLastContact, clip(v), maxLastContact/time.Millisecond)
		}
		m.LastContact = time.Duration(ms) * time.Millisecond
	}
	var err error
	if m.Leader, err = tokenHeader(h, HeaderLeader); err != nil {
		return m, err
	}
	if m.Session, err = tokenHeader(h, HeaderSession); err != nil {
		return m, err
	}
	return m, nil
}

// maxLastContact keeps LastContact within a time.Duration.
const maxLastContact = time.Duration(1<<63 - 1)

// tokenHeader reads an opaque header value: printable ASCII, no spaces, at
// most MaxMetaHeaderBytes.
func tokenHeader(h http.Header, name string) (string, error) {
	v := h.Get(name)
	if len(v) > MaxMetaHeaderBytes {
		return "", fmt.Errorf("header %s: %d bytes, over the limit of %d", name, len(v), MaxMetaHeaderBytes)
	}
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] > '~' {
			return "", fmt.Errorf("header %s %q: byte %d is not printable ASCII", name, clip(v), i)
		}
	}
	return v, nil
}

// SetHeaders writes m's Strata headers into h (zero fields are omitted);
// ParseResponseMeta reads them back.
func (m ResponseMeta) SetHeaders(h http.Header) {
	if m.Index != 0 {
		h.Set(HeaderIndex, strconv.FormatUint(m.Index, 10))
	}
	if m.LastContact != 0 {
		h.Set(HeaderLastContact, strconv.FormatInt(m.LastContact.Milliseconds(), 10))
	}
	if m.Leader != "" {
		h.Set(HeaderLeader, m.Leader)
	}
	if m.Session != "" {
		h.Set(HeaderSession, m.Session)
	}
}

// DecodeError builds the error of a failed call from its status and body.
// A body that is an error envelope with a code gives its code, message and
// details; any other body becomes an Error with a code chosen by status and
// a message made of the status text and a printable snippet of the body.
// The result always has Status set.
func DecodeError(status int, body []byte) *Error {
	var env ErrorEnvelope
	if json.Unmarshal(body, &env) == nil && env.Error != nil && env.Error.Code != "" {
		env.Error.Status = status
		return env.Error
	}
	msg := http.StatusText(status)
	if msg == "" {
		msg = "HTTP status " + strconv.Itoa(status)
	}
	if s := snippet(body); s != "" {
		msg += ": " + s
	}
	return &Error{Status: status, Code: codeForStatus(status), Message: msg}
}

// codeForStatus picks the error code a server would have sent with status.
func codeForStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return CodeBadRequest
	case http.StatusUnauthorized:
		return CodeUnauthenticated
	case http.StatusForbidden:
		return CodeForbidden
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusConflict:
		return CodeConflict
	case http.StatusRequestEntityTooLarge:
		return CodeTooLarge
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return CodeUnavailable
	case http.StatusGatewayTimeout, http.StatusRequestTimeout:
		return CodeTimeout
	}
	if status >= 400 && status < 500 {
		return CodeBadRequest
	}
	return CodeInternal
}

// snippet returns the start of body as one printable line: invalid UTF-8
// and control characters become spaces, runs of spaces collapse, and it is
// cut at errorSnippetBytes.
func snippet(body []byte) string {
	cut := len(body) > 4*errorSnippetBytes
	if cut {
		body = body[:4*errorSnippetBytes]
	}
	var b strings.Builder
	space := false
	for len(body) > 0 && b.Len() < errorSnippetBytes {
		r, n := utf8.DecodeRune(body)
		body = body[n:]
		if r == utf8.RuneError || r < ' ' || r == 0x7f || r == ' ' {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	s := b.String()
	if cut || len(body) > 0 {
		s += "..."
	}
	return s
}

// clip shortens a bad header value for an error message.
func clip(v string) string {
	const max = 64
	if len(v) > max {
		return v[:max] + "..."
	}
	return v
}
