package compose

import (
	"fmt"
	"os"
)

// The cluster of deploy/compose/docker-compose.yml, as compose.sh's
// nodes() lists it: per region i (1, 2, 3) a network NET.i.0/24 with the
// gate at .10, managers at .11-.13 and workers at .21-.22; gates also on
// the WAN network NET.0.0/24 at .10+i.

// service is one container of the compose file.
type service struct {
	Name   string // compose service name, also the node id
	Role   string // gate, manager or worker
	Region string
	// Group is the Raft group a fault of this container weakens (global
	// for gates, the region for managers) or "workers-<region>": the
	// planner faults at most one container of a group at a time.
	Group string
	// Nets maps each network the container is on to its address there.
	Nets map[string]string
}

var composeRegions = []string{"use1", "euw1", "apse1"}

// composeNet is the /16 prefix of the networks (STRATA_COMPOSE_NET).
func composeNet() string {
	if n := os.Getenv("STRATA_COMPOSE_NET"); n != "" {
		return n
	}
	return "10.231"
}

// composeServices lists every container of the cluster, in file order.
func composeServices(net string) []service {
	var out []service
	for i, r := range composeRegions {
		sub := fmt.Sprintf("%s.%d", net, i+1)
		out = append(out, service{Name: r + "-gate1", Role: "gate", Region: r, Group: "global",
			Nets: map[string]string{r: sub + ".10", "wan": fmt.Sprintf("%s.0.%d", net, 11+i)}})
		for m := 1; m <= 3; m++ {
			out = append(out, service{Name: fmt.Sprintf("%s-mgr%d", r, m), Role: "manager", Region: r, Group: r,
				Nets: map[string]string{r: fmt.Sprintf("%s.%d", sub, 10+m)}})
		}
		for w := 1; w <= 2; w++ {
			out = append(out, service{Name: fmt.Sprintf("%s-worker%d", r, w), Role: "worker", Region: r, Group: "workers-" + r,
				Nets: map[string]string{r: fmt.Sprintf("%s.%d", sub, 20+w)}})
		}
	}
	return out
}

// apiAddr is a node's API address as the host reaches it: its region
// network's address.
func (s service) apiAddr() string { return "https://" + s.Nets[s.Region] + ":7100" }
