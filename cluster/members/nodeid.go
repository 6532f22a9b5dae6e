package members

// MaxNodeIDBytes bounds a node id: its gossip name and Raft server id.
const MaxNodeIDBytes = 63

// IsNodeID reports whether s is a node id: 1 to MaxNodeIDBytes of
// [a-z0-9_-], starting with a letter or digit. The one rule for node ids,
// used by the node's config and by the operator's join.
func IsNodeID(s string) bool {
	if len(s) == 0 || len(s) > MaxNodeIDBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}
