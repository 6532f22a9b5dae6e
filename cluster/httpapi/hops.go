package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/strata-ledger/strata/transport/api"
)

// headerForwardMAC authenticates the Strata-Forwarded-By hops a node adds
// to a client's call it forwards: an HMAC-SHA256 under the cluster token
// of the method, the request URI and the hops. A client cannot make one,
// so the hops it sends itself are ignored, not obeyed.
const headerForwardMAC = "Strata-Forwarded-Mac"

// hops returns the nodes that forwarded (or relayed, at most
// maxRelayHops) r so far when a node of this
// cluster vouches for them; none for a call straight from a client, even
// one that sends Strata-Forwarded-By headers of its own.
func (sv *Server) hops(r *http.Request) []string { return trustedHops(r, sv.cfg.ClusterToken) }

// trustedHops is hops for the cluster token key.
func trustedHops(r *http.Request, key string) []string {
	hops := r.Header.Values(api.HeaderForwardedBy)
	if len(hops) == 0 || len(hops) > maxRelayHops {
		return nil
	}
	mac, err := hex.DecodeString(r.Header.Get(headerForwardMAC))
	if err != nil || !hmac.Equal(mac, hopsMAC(key, r.Method, r.URL.RequestURI(), hops)) {
		return nil
	}
	return hops
}

// setHops marks req, a call this node forwards, as forwarded by hops and
// then this node, with the MAC that makes the next node trust them.
func (sv *Server) setHops(req *http.Request, hops []string) {
	signHops(req, append(slices.Clone(hops), sv.cfg.NodeID), sv.cfg.ClusterToken)
}

// signHops sets all as req's hops, with their MAC under key.
func signHops(req *http.Request, all []string, key string) {
	for _, h := range all {
		req.Header.Add(api.HeaderForwardedBy, h)
	}
	req.Header.Set(headerForwardMAC, hex.EncodeToString(hopsMAC(key, req.Method, req.URL.RequestURI(), all)))
}

func hopsMAC(key, method, uri string, hops []string) []byte {
	m := hmac.New(sha256.New, []byte(key))
	fmt.Fprintf(m, "%s %s\n%s", method, uri, strings.Join(hops, "\n"))
	return m.Sum(nil)
}
