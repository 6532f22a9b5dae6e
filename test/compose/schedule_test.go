package compose

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// faultKind is what the chaos run does to a container.
type faultKind string

const (
	faultKill       faultKind = "kill"       // docker kill, then docker start
	faultPause      faultKind = "pause"      // docker pause, then docker unpause
	faultDisconnect faultKind = "disconnect" // docker network disconnect, then connect at the same address
)

var faultKinds = []faultKind{faultKill, faultPause, faultDisconnect}

// fault is one planned fault: applied At after the start, healed Hold later.
type fault struct {
	At      time.Duration
	Hold    time.Duration
	Kind    faultKind
	Target  string // service name
	Network string // disconnect: the network cut
}

func (f fault) String() string {
	s := fmt.Sprintf("t=%5.1fs %-10s %-14s for %4.1fs", f.At.Seconds(), f.Kind, f.Target, f.Hold.Seconds())
	if f.Network != "" {
		s += " from " + f.Network
	}
	return s
}

// Bounds of a plan. The gap between two faults and a fault's hold are
// drawn uniformly from these ranges; a killed container needs time to
// restart and catch up, so its group stays out of the draw for
// restartSettle after its heal.
const (
	minFaultGap       = 2 * time.Second
	maxFaultGap       = 6 * time.Second
	minFaultHold      = 3 * time.Second
	maxFaultHold      = 15 * time.Second
	restartSettle     = 10 * time.Second
	maxFaultsAtOnce   = 3
	planQuietTail     = 10 * time.Second // no fault starts this close to the end
	maxPlannedFaults  = 10_000
	minChaosDuration  = 20 * time.Second
	maxChaosDurationH = 2 // hours
)

// planFaults draws the fault schedule of a run from seed alone, so a seed
// replays it: at most maxFaultsAtOnce faults at a time and at most one
// per group (a Raft group keeps its majority: one gate of three, one
// manager of a region's three, one of a region's two workers), every
// fault healed before duration ends.
func planFaults(seed uint64, duration time.Duration, services []service) []fault {
	rng := rand.New(rand.NewPCG(seed, 0x5747a7a))
	between := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	}
	var plan []fault
	busyUntil := map[string]time.Duration{} // group -> when it may be faulted again
	groupOf := map[string]string{}
	for _, s := range services {
		groupOf[s.Name] = s.Group
	}
	for at := between(minFaultGap, maxFaultGap); at < duration-planQuietTail && len(plan) < maxPlannedFaults; at += between(minFaultGap, maxFaultGap) {
		active := 0
		for _, f := range plan {
			if f.At+f.Hold > at {
				active++
			}
		}
		if active >= maxFaultsAtOnce {
			continue
		}
		var free []service
		for _, s := range services {
			if busyUntil[s.Group] <= at {
				free = append(free, s)
			}
		}
		if len(free) == 0 {
			continue
		}
		s := free[rng.IntN(len(free))]
		f := fault{At: at, Kind: faultKinds[rng.IntN(len(faultKinds))], Target: s.Name,
			Hold: min(between(minFaultHold, maxFaultHold), duration-at)}
		if f.Kind == faultDisconnect {
			nets := make([]string, 0, len(s.Nets))
			for n := range s.Nets {
				nets = append(nets, n)
			}
			slices.Sort(nets)
			f.Network = nets[rng.IntN(len(nets))]
		}
		settle := time.Duration(0)
		if f.Kind == faultKill {
			settle = restartSettle
		}
		busyUntil[groupOf[s.Name]] = f.At + f.Hold + settle
		plan = append(plan, f)
	}
	return plan
}

// countByKind counts a plan's faults by kind, "kill=3 pause=2 ...".
func countByKind(plan []fault) map[faultKind]int {
	out := map[faultKind]int{}
	for _, f := range plan {
		out[f.Kind]++
	}
	return out
}

func formatCounts(c map[faultKind]int) string {
	var parts []string
	for _, k := range faultKinds {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c[k]))
	}
	return strings.Join(parts, " ")
}
