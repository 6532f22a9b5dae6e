package httpapi

import (
	"net/url"
	"strings"
)

// Reading a request's query without url.Values (issue 19, the request
// path): the usual write has one parameter (?durability=regional) and
// parsing it into a map costs three allocations, twice per request
// before (the relay wrapper's ?node= and the handler's durability).

// queryValue is u.Query().Get(key). A query that is one key=value pair
// with nothing to unescape is read in place; any other is parsed in full.
// (One difference: a GODEBUG urlmaxqueryparams of 1, which makes net/url
// refuse every query with a parameter, is not honoured for that pair.)
func queryValue(u *url.URL, key string) string {
	raw := u.RawQuery
	if raw == "" {
		return ""
	}
	if strings.ContainsAny(raw, "&;%+") {
		return u.Query().Get(key)
	}
	k, v, _ := strings.Cut(raw, "=")
	if k != key {
		return ""
	}
	return v
}

// mayName reports whether the query raw may hold a parameter key: false
// only when it cannot (key is not in it, and nothing in it is
// percent-encoded to spell key).
func mayName(raw, key string) bool {
	return strings.Contains(raw, key) || strings.IndexByte(raw, '%') >= 0
}
