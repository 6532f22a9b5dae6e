package api

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Durability levels a write may ask for (DESIGN §4), as the durability
// query parameter spells them. Responses name the level reached in upper
// case (NONE, LOCAL, REGIONAL, GLOBAL).
const (
	DurabilityNone     = "none"
	DurabilityLocal    = "local"
	DurabilityRegional = "regional"
	DurabilityGlobal   = "global"
)

var (
	durabilities  = []string{DurabilityNone, DurabilityLocal, DurabilityRegional, DurabilityGlobal}
	consistencies = []string{ConsistencyEventual, ConsistencySession, ConsistencyBounded, ConsistencyStrong}
)

// ReadOptions choose how fresh a read must be (DESIGN §8). The zero value
// leaves the choice to the server.
type ReadOptions struct {
	// Consistency is eventual, session, bounded or strong. When empty it
	// is session if Session is set, bounded if MaxStaleness is set, and
	// the server's default otherwise.
	Consistency string
	// MaxStaleness bounds a bounded read's distance from the leader.
	MaxStaleness time.Duration
	// Session is a token a write returned (ResponseMeta.Session); it is
	// sent in the Strata-Session header.
	Session string
}

// Level returns the consistency level the options ask for, "" for the
// server's default.
func (o ReadOptions) Level() string {
	switch {
	case o.Consistency != "":
		return strings.ToLower(o.Consistency)
	case o.Session != "":
		return ConsistencySession
	case o.MaxStaleness > 0:
		return ConsistencyBounded
	}
	return ""
}

// Validate reports options the server would refuse, naming the bad value.
func (o ReadOptions) Validate() error {
	level := o.Level()
	if level != "" && !slices.Contains(consistencies, level) {
		return fmt.Errorf("consistency %q: want one of %s", o.Consistency, strings.Join(consistencies, ", "))
	}
	if o.MaxStaleness < 0 {
		return fmt.Errorf("max staleness %s: must not be negative", o.MaxStaleness)
	}
	if o.MaxStaleness > 0 && level != ConsistencyBounded {
		return fmt.Errorf("max staleness %s applies to bounded reads only, not %s", o.MaxStaleness, level)
	}
	if len(o.Session) > MaxMetaHeaderBytes {
		return fmt.Errorf("session token: %d bytes, over the limit of %d", len(o.Session), MaxMetaHeaderBytes)
	}
	for i := 0; i < len(o.Session); i++ {
		if c := o.Session[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("session token %q: byte %d is not printable ASCII", clip(o.Session), i)
		}
	}
	return nil
}

func (o ReadOptions) apply(q url.Values) {
	if level := o.Level(); level != "" {
		q.Set(ParamConsistency, level)
	}
	if o.MaxStaleness > 0 {
		q.Set(ParamMaxStaleness, o.MaxStaleness.String())
	}
}

// WriteOptions choose when a write is acknowledged (DESIGN §4).
type WriteOptions struct {
	// Durability is none, local, regional or global (any case); empty
	// means the operation's default level.
	Durability string
}

// Validate reports a durability level that does not exist.
func (o WriteOptions) Validate() error {
	if o.Durability != "" && !slices.Contains(durabilities, strings.ToLower(o.Durability)) {
		return fmt.Errorf("durability %q: want one of %s", o.Durability, strings.Join(durabilities, ", "))
	}
	return nil
}

func (o WriteOptions) apply(q url.Values) {
	if o.Durability != "" {
		q.Set(ParamDurability, strings.ToLower(o.Durability))
	}
}

// JobQuery filters GET /v1/jobs. Empty fields do not filter; Limit 0 is
// the server's default page size.
type JobQuery struct {
	Tenant string
	Status string
	Region string
	Page
}

// Page selects one page of a paginated list: at most Limit items (0: the
// server's default) after Cursor (a NextCursor of the previous page).
type Page struct {
	Limit  int
	Cursor string
}

func (p Page) validate() error {
	if p.Limit < 0 {
		return fmt.Errorf("limit %d: must not be negative", p.Limit)
	}
	return nil
}

func (p Page) apply(q url.Values) {
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
}

func (jq JobQuery) apply(q url.Values) {
	for k, v := range map[string]string{"tenant": jq.Tenant, "status": jq.Status, "region": jq.Region} {
		if v != "" {
			q.Set(k, v)
		}
	}
	jq.Page.apply(q)
}
