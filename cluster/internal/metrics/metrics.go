// Package metrics holds what every package of the node needs to register
// its Prometheus collectors; it keeps no state.
package metrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers cs with reg; a nil reg registers nothing (tests and
// benchmarks that build a part alone). what names the part in the error.
func Register(reg prometheus.Registerer, what string, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("cluster: register %s metrics: %w", what, err)
		}
	}
	return nil
}
