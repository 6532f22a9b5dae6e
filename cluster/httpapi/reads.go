package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/members"
	"github.com/strata-ledger/strata/transport/api"
)

// Reads at the consistency the caller asks for (DESIGN §8,
// cluster/DESIGN.md "Reads"), and forwarding of requests to the node that
// can answer them.

// Read and forwarding limits.
const (
	// DefaultConsistency is what a read without consistency= gets:
	// linearizable, as etcd's default.
	DefaultConsistency = api.ConsistencyStrong
	// maxForwardHops bounds how often one request is forwarded: a
	// manager to a gate, that gate to the global leader; or, for the
	// cluster's maintenance status, a gate to another region's gate, that
	// gate to one of its managers, a manager still catching up after a
	// restart to its leader. A node never forwards a request it already
	// forwarded (the hops name it), so the bound is not what stops loops.
	maxForwardHops = 3
	// maxProxyResponse bounds a forwarded answer.
	maxProxyResponse = 64 << 20
)

// readOpts is a read's consistency=, max_staleness= and session token.
type readOpts struct {
	consistency  string
	maxStaleness time.Duration
	session      uint64 // 0: none
}

func (sv *Server) parseReadOpts(r *http.Request) (readOpts, error) {
	q := r.URL.Query()
	o := readOpts{consistency: q.Get(api.ParamConsistency), maxStaleness: sv.cfg.MaxStaleness}
	if o.consistency == "" {
		o.consistency = DefaultConsistency
	}
	switch o.consistency {
	case api.ConsistencyEventual, api.ConsistencySession, api.ConsistencyBounded, api.ConsistencyStrong:
	default:
		return o, httpx.BadRequest("consistency %q must be eventual, session, bounded or strong", o.consistency)
	}
	if s := q.Get(api.ParamMaxStaleness); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return o, httpx.BadRequest("max_staleness %q is not a positive duration such as 500ms", s)
		}
		o.maxStaleness = d
	}
	if tok := r.Header.Get(api.HeaderSession); tok != "" {
		grp, idx, err := parseSession(tok)
		if err != nil {
			return o, err
		}
		if grp != sv.cfg.Group {
			return o, httpx.BadRequest("session token %q is of group %s; this read is served by group %s", tok, grp, sv.cfg.Group)
		}
		o.session = idx
	} else if o.consistency == api.ConsistencySession {
		return o, httpx.BadRequest("consistency=session needs the %s header returned by a write", api.HeaderSession)
	}
	return o, nil
}

// sessionToken is the Strata-Session value of a write committed at index.
func (sv *Server) sessionToken(index uint64) string {
	if index == 0 {
		return ""
	}
	return sv.cfg.Group + ":" + strconv.FormatUint(index, 10)
}

func parseSession(tok string) (string, uint64, error) {
	grp, idx, ok := strings.Cut(tok, ":")
	i, err := strconv.ParseUint(idx, 10, 64)
	if !ok || grp == "" || err != nil || i == 0 {
		return "", 0, httpx.BadRequest("%s %q is not {group}:{index}", api.HeaderSession, tok)
	}
	return grp, i, nil
}

// prepareRead makes this node fit to answer a read at o's consistency: it
// returns true when the handler should read its local ledger. Otherwise it
// has answered: forwarded to the leader, or an error.
func (sv *Server) prepareRead(w http.ResponseWriter, r *http.Request, o readOpts) bool {
	if why := sv.ledgerUnfit(); why != "" {
		// A ledger not (yet) known to be its group's is never served.
		sv.forwardToLeader(w, r, nil, why)
		return false
	}
	if o.session > 0 {
		ctx, cancel := context.WithTimeout(r.Context(), sv.cfg.SessionWait)
		defer cancel()
		if err := sv.cfg.Applied.Wait(ctx, o.session); err != nil {
			httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable,
				Message: fmt.Sprintf("node %s applied index %d, session needs %d: not reached within %s",
					sv.cfg.NodeID, sv.cfg.Ledger.AppliedIndex(), o.session, sv.cfg.SessionWait)})
			return false
		}
	}
	switch o.consistency {
	case api.ConsistencyBounded:
		if sv.cfg.Consensus.Leader().ID != "" && sv.lastContact() <= o.maxStaleness {
			return true
		}
		sv.forwardToLeader(w, r, nil, fmt.Sprintf("last contact with the leader is older than max_staleness %s", o.maxStaleness))
		return false
	case api.ConsistencyStrong:
		if !sv.cfg.Consensus.IsLeader() {
			sv.forwardToLeader(w, r, nil, "strong reads are served by the leader")
			return false
		}
		if err := sv.cfg.Consensus.ConfirmLeadership(r.Context()); err != nil {
			httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable,
				Message: fmt.Sprintf("strong read: node %s could not confirm leadership with a quorum: %v", sv.cfg.NodeID, err)})
			return false
		}
	}
	return true
}

// forwardToLeader sends r (with body) to the group leader's API, or answers
// 503 saying why this node could not serve it.
func (sv *Server) forwardToLeader(w http.ResponseWriter, r *http.Request, body []byte, why string) {
	id := sv.cfg.Consensus.Leader().ID
	if id == "" || id == sv.cfg.NodeID {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable,
			Message: fmt.Sprintf("node %s: %s, and no leader is known", sv.cfg.NodeID, why)})
		return
	}
	m, ok := sv.cfg.Members.Lookup(id)
	if !ok || m.Meta.APIAddr == "" {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable,
			Message: fmt.Sprintf("node %s: %s, and leader %s is not known to gossip", sv.cfg.NodeID, why, id)})
		return
	}
	sv.proxy(w, r, m.Meta.APIAddr, body)
}

// lanPeers returns the alive members of this node's LAN pool with role (and
// region, when not empty), this node excluded.
func (sv *Server) lanPeers(role Role, region string) []members.Member {
	var out []members.Member
	for _, m := range sv.cfg.Members.Members() {
		pm, ok := m.In(members.PoolLAN)
		if !ok || pm.Status != members.MemberAlive || m.Meta.Role != role || m.Meta.NodeID == sv.cfg.NodeID {
			continue
		}
		if region == "" || m.Meta.Region == region {
			out = append(out, m)
		}
	}
	return out
}

// forwardToRole sends r to a node of role in this node's region (a manager
// forwarding job calls to its region's gate; a gate forwarding workflow
// events to a manager).
func (sv *Server) forwardToRole(w http.ResponseWriter, r *http.Request, body []byte, role Role) {
	peers := sv.lanPeers(role, sv.cfg.Region)
	if len(peers) == 0 {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable,
			Message: fmt.Sprintf("node %s (%s) forwards this call to a %s of region %s, and none is alive", sv.cfg.NodeID, sv.cfg.Role, role, sv.cfg.Region)})
		return
	}
	// Prefer the group leader when it is one of them: one hop less.
	leader := sv.cfg.Consensus.Leader().ID
	i := slices.IndexFunc(peers, func(m members.Member) bool { return m.Meta.NodeID == leader })
	if i < 0 {
		i = int(time.Now().UnixNano() % int64(len(peers)))
	}
	sv.proxy(w, r, peers[i].Meta.APIAddr, body)
}

// proxy forwards r to addr and copies the answer back. A request already
// forwarded maxForwardHops times, or through this node, is refused.
func (sv *Server) proxy(w http.ResponseWriter, r *http.Request, addr string, body []byte) {
	hops := sv.hops(r)
	if len(hops) >= maxForwardHops || slices.Contains(hops, sv.cfg.NodeID) {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable,
			Message: fmt.Sprintf("node %s cannot serve this request and it was already forwarded by %s", sv.cfg.NodeID, strings.Join(hops, ", "))})
		return
	}
	sv.send(w, r, addr, body, hops)
}

// send forwards r, which came through hops, to addr and copies the answer
// back; the caller checked the hops.
func (sv *Server) send(w http.ResponseWriter, r *http.Request, addr string, body []byte, hops []string) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+addr+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	for _, h := range []string{"Authorization", "Content-Type", "Accept", api.HeaderSession} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	sv.setHops(req, hops)
	resp, err := sv.cfg.Peers.HTTPClient().Do(req)
	if err != nil {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusServiceUnavailable, Code: httpx.CodeUnavailable,
			Message: fmt.Sprintf("node %s forwarded the request to %s: %v", sv.cfg.NodeID, addr, err)})
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, io.LimitReader(resp.Body, maxProxyResponse))
}
