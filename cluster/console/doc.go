// Package console is the web console every node serves at /ui (issue 20,
// DESIGN §12): static files embedded in the binary — one HTML page, plain
// ES modules and a stylesheet written by hand, no build step, nothing
// fetched from elsewhere — and the http.Handler that serves them.
//
// The page talks only to the public API v1 of the node that served it,
// with a bearer token the user enters once (kept in sessionStorage, sent
// in the Authorization header, never in a URL). It reaches the other
// nodes through that node's relay (`?node=ID[&via=ID]`, docs/API.md), so
// a browser that can reach one node sees the whole cluster.
//
// Invariants, each checked by a test of this package:
//   - every answer carries a strict Content-Security-Policy (no inline
//     script or style, default-src 'self', no framing), nosniff and
//     no-referrer;
//   - the HTML holds no inline script, style element or style attribute,
//     and no event-handler attribute;
//   - the files together stay under MaxTotalBytes uncompressed.
//
// The handler keeps no state but what it computes once from the embedded
// files (their ETags), and is safe for concurrent use. It does no
// authentication: the files hold no secret, and the API calls they make
// carry the token.
package console
