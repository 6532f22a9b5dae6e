package cluster

import (
	"context"
	"testing"

	"github.com/strata-ledger/strata/cluster/internal/testkit"
)

// Shorter names for the shared test helpers.
var (
	waitUntil    = testkit.WaitUntil
	jobEvent     = testkit.JobEvent
	jobID        = testkit.JobID
	jobEvents    = testkit.JobEvents
	metricValue  = testkit.MetricValue
	wantOutcomes = testkit.WantOutcomes
	mustBatch    = testkit.MustBatch
)

func testCtx(t testing.TB) context.Context { return testkit.Ctx(t) }
