package cluster

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
	// maxForwardHops bounds how often one request is forwarded (a manager
	// to a gate, that gate to the global leader).
	maxForwardHops = 2
	// maxProxyResponse bounds a forwarded answer.
	maxProxyResponse = 64 << 20
)

// readOpts is a read's consistency=, max_staleness= and session token.
type readOpts struct {
	consistency  string
	maxStaleness time.Duration
	session      uint64 // 0: none
}

func (n *Node) parseReadOpts(r *http.Request) (readOpts, error) {
	q := r.URL.Query()
	o := readOpts{consistency: q.Get(api.ParamConsistency), maxStaleness: n.cfg.MaxStaleness}
	if o.consistency == "" {
		o.consistency = DefaultConsistency
	}
	switch o.consistency {
	case api.ConsistencyEventual, api.ConsistencySession, api.ConsistencyBounded, api.ConsistencyStrong:
	default:
		return o, badRequest("consistency %q must be eventual, session, bounded or strong", o.consistency)
	}
	if s := q.Get(api.ParamMaxStaleness); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return o, badRequest("max_staleness %q is not a positive duration such as 500ms", s)
		}
		o.maxStaleness = d
	}
	if tok := r.Header.Get(api.HeaderSession); tok != "" {
		grp, idx, err := parseSession(tok)
		if err != nil {
			return o, err
		}
		if grp != n.group {
			return o, badRequest("session token %q is of group %s; this read is served by group %s", tok, grp, n.group)
		}
		o.session = idx
	} else if o.consistency == api.ConsistencySession {
		return o, badRequest("consistency=session needs the %s header returned by a write", api.HeaderSession)
	}
	return o, nil
}

// sessionToken is the Strata-Session value of a write committed at index.
func (n *Node) sessionToken(index uint64) string {
	if index == 0 {
		return ""
	}
	return n.group + ":" + strconv.FormatUint(index, 10)
}

func parseSession(tok string) (string, uint64, error) {
	grp, idx, ok := strings.Cut(tok, ":")
	i, err := strconv.ParseUint(idx, 10, 64)
	if !ok || grp == "" || err != nil || i == 0 {
		return "", 0, badRequest("%s %q is not {group}:{index}", api.HeaderSession, tok)
	}
	return grp, i, nil
}

// prepareRead makes this node fit to answer a read at o's consistency: it
// returns true when the handler should read its local ledger. Otherwise it
// has answered: forwarded to the leader, or an error.
func (n *Node) prepareRead(w http.ResponseWriter, r *http.Request, o readOpts) bool {
	if o.session > 0 {
		ctx, cancel := context.WithTimeout(r.Context(), n.cfg.SessionWait)
		defer cancel()
		if err := n.applied.Wait(ctx, o.session); err != nil {
			writeError(w, &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
				Message: fmt.Sprintf("node %s applied index %d, session needs %d: not reached within %s",
					n.cfg.NodeID, n.ledger.AppliedIndex(), o.session, n.cfg.SessionWait)})
			return false
		}
	}
	switch o.consistency {
	case api.ConsistencyBounded:
		if n.raft.Leader().ID != "" && n.lastContact() <= o.maxStaleness {
			return true
		}
		n.forwardToLeader(w, r, nil, fmt.Sprintf("last contact with the leader is older than max_staleness %s", o.maxStaleness))
		return false
	case api.ConsistencyStrong:
		if !n.raft.IsLeader() {
			n.forwardToLeader(w, r, nil, "strong reads are served by the leader")
			return false
		}
		if err := n.raft.ConfirmLeadership(r.Context()); err != nil {
			writeError(w, &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
				Message: fmt.Sprintf("strong read: node %s could not confirm leadership with a quorum: %v", n.cfg.NodeID, err)})
			return false
		}
	}
	return true
}

// forwardToLeader sends r (with body) to the group leader's API, or answers
// 503 saying why this node could not serve it.
func (n *Node) forwardToLeader(w http.ResponseWriter, r *http.Request, body []byte, why string) {
	id := n.raft.Leader().ID
	if id == "" || id == n.cfg.NodeID {
		writeError(w, &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: fmt.Sprintf("node %s: %s, and no leader is known", n.cfg.NodeID, why)})
		return
	}
	m, ok := n.members.Lookup(id)
	if !ok || m.Meta.APIAddr == "" {
		writeError(w, &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: fmt.Sprintf("node %s: %s, and leader %s is not known to gossip", n.cfg.NodeID, why, id)})
		return
	}
	n.proxy(w, r, m.Meta.APIAddr, body)
}

// lanPeers returns the alive members of this node's LAN pool with role (and
// region, when not empty), this node excluded.
func (n *Node) lanPeers(role Role, region string) []members.Member {
	var out []members.Member
	for _, m := range n.members.Members() {
		pm, ok := m.In(members.PoolLAN)
		if !ok || pm.Status != members.MemberAlive || m.Meta.Role != role || m.Meta.NodeID == n.cfg.NodeID {
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
func (n *Node) forwardToRole(w http.ResponseWriter, r *http.Request, body []byte, role Role) {
	peers := n.lanPeers(role, n.cfg.Region)
	if len(peers) == 0 {
		writeError(w, &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: fmt.Sprintf("node %s (%s) forwards this call to a %s of region %s, and none is alive", n.cfg.NodeID, n.cfg.Role, role, n.cfg.Region)})
		return
	}
	// Prefer the group leader when it is one of them: one hop less.
	leader := n.raft.Leader().ID
	i := slices.IndexFunc(peers, func(m members.Member) bool { return m.Meta.NodeID == leader })
	if i < 0 {
		i = int(time.Now().UnixNano() % int64(len(peers)))
	}
	n.proxy(w, r, peers[i].Meta.APIAddr, body)
}

// proxy forwards r to addr and copies the answer back. A request already
// forwarded maxForwardHops times, or through this node, is refused.
func (n *Node) proxy(w http.ResponseWriter, r *http.Request, addr string, body []byte) {
	hops := r.Header.Values(api.HeaderForwardedBy)
	if len(hops) >= maxForwardHops || slices.Contains(hops, n.cfg.NodeID) {
		writeError(w, &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: fmt.Sprintf("node %s cannot serve this request and it was already forwarded by %s", n.cfg.NodeID, strings.Join(hops, ", "))})
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+addr+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		writeError(w, err)
		return
	}
	for _, h := range []string{"Authorization", "Content-Type", "Accept", api.HeaderSession} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	for _, h := range hops {
		req.Header.Add(api.HeaderForwardedBy, h)
	}
	req.Header.Add(api.HeaderForwardedBy, n.cfg.NodeID)
	resp, err := n.peers.HTTPClient().Do(req)
	if err != nil {
		writeError(w, &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: fmt.Sprintf("node %s forwarded the request to %s: %v", n.cfg.NodeID, addr, err)})
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
