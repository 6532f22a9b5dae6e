package bench

import (
	"fmt"

	"github.com/strata-ledger/strata/transport/api"
)

// TierAddrs returns the API addresses a workload of tier writes to: the
// gates for the global tier, the managers of region for the regional one.
func TierAddrs(cf *api.ClusterFile, tier, region string) ([]string, error) {
	if tier == TierRegional {
		if addrs := cf.ManagerAddrs(region); len(addrs) > 0 {
			return addrs, nil
		}
		return nil, fmt.Errorf("cluster file lists no manager of region %q", region)
	}
	if addrs := cf.GateAddrs(); len(addrs) > 0 {
		return addrs, nil
	}
	return nil, fmt.Errorf("cluster file lists no gate")
}
