package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
)

// Request deadlines (issue 17, finding 5). The http.Server bounds a
// request's line and headers (readHeaderTimeout, MaxHeaderBytes) and an
// idle connection (idleTimeout); the wrapper here bounds the rest of every
// request, whatever route it takes:
//
//   - its body must arrive within bodyReadTimeout of the end of its
//     headers (408 otherwise, bodyReadError).
//   - its answer must be written within writeTimeout of the end of its
//     headers. A watch stream sets a deadline per write (watch.go), a
//     lease long-poll and a relayed watch extend theirs by what they wait
//     (extendWriteDeadline), pprof profiles and traces by their duration.
//
// The read deadline is set only on a request with a body, before the
// handler runs, and nothing sets one later. net/http starts a background
// read of the connection once the body is consumed (at once for a request
// without one) and clears the read deadline as it does
// (connReader.startBackgroundRead in net/http/server.go); a read deadline
// set after that would end the background read and with it the request's
// context (handleReadErrorLocked), so a handler that outlived it (a
// long-poll, a watch) would be cancelled.
//
// Why not http.Server's ReadTimeout and WriteTimeout: a server-wide
// WriteTimeout makes net/http/pprof refuse longer profiles, and both are
// fields net/http reads per connection, which a test cannot lower while
// the server runs; per request, they can (SetTimeouts).

// Timeouts are the per-request deadlines; a zero field is its default.
type Timeouts struct {
	// Body bounds reading a request's body (default bodyReadTimeout).
	Body time.Duration
	// Write bounds an ordinary request's answer (default writeTimeout).
	Write time.Duration
}

// maxProfileExtension bounds how far a pprof profile or trace pushes its
// write deadline.
const maxProfileExtension = time.Hour

// SetTimeouts sets the per-request deadlines of requests from now on; a
// zero field restores its default. Tests lower them to tens of
// milliseconds rather than wait out the defaults.
func (sv *Server) SetTimeouts(t Timeouts) { sv.timeouts.Store(&t) }

// requestTimeouts is the deadlines in force, defaults filled in.
func (sv *Server) requestTimeouts() Timeouts {
	var t Timeouts
	if p := sv.timeouts.Load(); p != nil {
		t = *p
	}
	if t.Body <= 0 {
		t.Body = bodyReadTimeout
	}
	if t.Write <= 0 {
		t.Write = writeTimeout
	}
	return t
}

// deadlines wraps the whole API (every route, /metrics and pprof
// included) with the per-request deadlines.
func (sv *Server) deadlines(h http.Handler) http.Handler { return withDeadlines(h, sv.requestTimeouts) }

// withDeadlines sets a request's read deadline for its body and its write
// deadline for its answer, then serves it with h.
func withDeadlines(h http.Handler, timeouts func() Timeouts) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := timeouts()
		now := time.Now()
		_ = setWriteDeadline(w, now.Add(t.Write+profileDuration(r)))
		if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
			// After the headers net/http leaves the connection without a
			// read deadline (no ReadTimeout): the body gets one here, and
			// net/http clears it at the body's end (see above).
			_ = setReadDeadline(w, now.Add(t.Body))
		}
		h.ServeHTTP(w, r)
	})
}

// setWriteDeadline and setReadDeadline are http.ResponseController's, asked
// of w itself first: net/http's writer has them, and a controller per
// request is an allocation per request (issue 19).
func setWriteDeadline(w http.ResponseWriter, t time.Time) error {
	if d, ok := w.(interface{ SetWriteDeadline(time.Time) error }); ok {
		return d.SetWriteDeadline(t)
	}
	return http.NewResponseController(w).SetWriteDeadline(t)
}

func setReadDeadline(w http.ResponseWriter, t time.Time) error {
	if d, ok := w.(interface{ SetReadDeadline(time.Time) error }); ok {
		return d.SetReadDeadline(t)
	}
	return http.NewResponseController(w).SetReadDeadline(t)
}

// extendWriteDeadline gives the answer being written to w d more than an
// ordinary request's: a handler that waits d on purpose (a long-poll, a
// relay's connection to a gate) calls it before it waits.
func (sv *Server) extendWriteDeadline(w http.ResponseWriter, d time.Duration) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d + sv.requestTimeouts().Write))
}

// profileDuration is how long a pprof profile or trace asks to run
// (seconds=, pprof's defaults otherwise), at most maxProfileExtension; 0
// for every other request.
func profileDuration(r *http.Request) time.Duration {
	var d time.Duration
	switch r.URL.Path {
	case "/debug/pprof/profile":
		d = 30 * time.Second
	case "/debug/pprof/trace":
		d = time.Second
	default:
		return 0
	}
	if s, err := strconv.ParseFloat(r.URL.Query().Get("seconds"), 64); err == nil && s > 0 {
		d = maxProfileExtension
		if s < maxProfileExtension.Seconds() {
			d = time.Duration(s * float64(time.Second))
		}
	}
	return d
}

// bodyReadError is the API error of a failed read of a request body: a
// 408 when the body did not arrive within its deadline, a 400 otherwise.
// (A body decoded as it is read, httpx.DecodeJSON, gets the same 408.)
func bodyReadError(err error) *httpx.APIError {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		ae := httpx.BodyTimeout()
		ae.Message = fmt.Sprintf("the request body did not arrive within %s of the request's headers", bodyReadTimeout)
		ae.Details = map[string]any{"limit": bodyReadTimeout.String()}
		return ae
	}
	return httpx.BadRequest("read request body: %v", err)
}
