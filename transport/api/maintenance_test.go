package api

import (
	"encoding/json"
	"testing"

	"github.com/pb33f/libopenapi-validator/schema_validation"

	"github.com/strata-ledger/strata/hlc"
)

// The cluster-wide maintenance wire types against their schemas in the
// OpenAPI document.
func TestOpenAPI_MaintenanceTypesMatchSchemas(t *testing.T) {
	_, m := openAPIModel(t)
	sv := schema_validation.NewSchemaValidator()
	ts := hlc.Timestamp{WallMs: 1764081234567, Logical: 2, Node: 3}
	cluster := MaintenanceStatus{Scope: MaintenanceScopeCluster, On: true, Drain: true, Since: 1764081234567, Reason: "migration",
		Ticket: "OPS-9", Requestor: "admin", HLC: &ts}
	region := MaintenanceStatus{Scope: MaintenanceScopeRegion, Region: "use1", On: true, Since: 1, Reason: "kernel", Ticket: "OPS-7",
		HLC: &ts, Cluster: &cluster, Effective: &MaintenanceEffect{On: true, Drain: true, By: []string{"region", "cluster"}}}
	for _, c := range []struct {
		schema string
		v      any
	}{
		{"MaintenanceStatus", region},
		{"ClusterMaintenanceStatus", ClusterMaintenanceStatus{Cluster: cluster, Regions: []MaintenanceStatus{region,
			{Scope: MaintenanceScopeRegion, Region: "euw1", Error: "no answer within 5s"}}}},
		{"ClusterMaintenanceStatus", ClusterMaintenanceStatus{Cluster: MaintenanceStatus{Scope: MaintenanceScopeCluster}, Regions: []MaintenanceStatus{}}},
		{"ClusterMaintenanceRequest", ClusterMaintenanceRequest{On: true, Drain: true, GovernanceChange: GovernanceChange{Reason: "r", Ticket: "T"}}},
		{"MaintenanceRequest", MaintenanceRequest{Region: "use1", On: true, Drain: true, GovernanceChange: GovernanceChange{Reason: "r", Ticket: "T"}}},
		{"MaintenanceResponse", MaintenanceResponse{Maintenance: cluster, WriteResponse: WriteResponse{Durability: "GLOBAL", HLC: ts, Session: "global:4"}}},
	} {
		b, err := json.Marshal(c.v)
		if err != nil {
			t.Fatalf("%s: %v", c.schema, err)
		}
		checkAgainst(t, sv, c.schema+" "+string(b), schemaOf(t, m, c.schema), b)
	}
}
