package cluster

// knownRegions lists the regions gossip knows (this node's, and every
// member's, alive or not: a region whose nodes are all down is still one
// the cluster-wide maintenance mode must reach when it comes back). The
// global leader converges each to that mode (cluster/lifecycle).
func (n *Node) knownRegions() []string {
	seen := map[string]bool{n.cfg.Region: true}
	out := []string{n.cfg.Region}
	for _, m := range n.members.Members() {
		if r := m.Meta.Region; r != "" && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}
