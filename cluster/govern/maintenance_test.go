package govern

import (
	"slices"
	"testing"
)

func TestEffectiveMaintenance(t *testing.T) {
	on := &MaintenanceRecord{On: true, SinceMs: 1}
	drain := &MaintenanceRecord{On: true, SinceMs: 1, Drain: true}
	off := &MaintenanceRecord{SinceMs: 2}
	tests := []struct {
		name         string
		own, cluster *MaintenanceRecord
		want         MaintenanceMode
		sources      []string
	}{
		{"no records", nil, nil, MaintenanceMode{}, nil},
		{"both off", off, off, MaintenanceMode{}, nil},
		{"the region's own", on, nil, MaintenanceMode{On: true, Region: true}, []string{"region"}},
		{"the cluster's", nil, on, MaintenanceMode{On: true, Cluster: true}, []string{"cluster"}},
		{"the cluster off keeps the region's own", on, off, MaintenanceMode{On: true, Region: true}, []string{"region"}},
		{"the region off keeps the cluster's", off, drain, MaintenanceMode{On: true, Drain: true, Cluster: true}, []string{"cluster"}},
		{"both on", on, on, MaintenanceMode{On: true, Region: true, Cluster: true}, []string{"region", "cluster"}},
		{"either drains", drain, on, MaintenanceMode{On: true, Drain: true, Region: true, Cluster: true}, []string{"region", "cluster"}},
		{"the cluster drains over the region's plain mode", on, drain, MaintenanceMode{On: true, Drain: true, Region: true, Cluster: true}, []string{"region", "cluster"}},
		{"a drain flag on an off record drains nothing", &MaintenanceRecord{Drain: true}, nil, MaintenanceMode{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := EffectiveMaintenance(tc.own, tc.cluster)
			if got != tc.want {
				t.Fatalf("EffectiveMaintenance = %+v, want %+v", got, tc.want)
			}
			if s := got.Sources(); !slices.Equal(s, tc.sources) {
				t.Fatalf("Sources = %v, want %v", s, tc.sources)
			}
		})
	}
}

func TestMaintenanceRecord_DrainOnlyWhileOn(t *testing.T) {
	if _, err := EncodeMaintenance(MaintenanceRecord{Drain: true}); err == nil {
		t.Fatal("a draining record that is off encoded")
	}
	if _, err := DecodeMaintenance([]byte(`{"on":false,"since":1,"drain":true}`)); err == nil {
		t.Fatal("a draining record that is off decoded")
	}
	b, err := EncodeMaintenance(MaintenanceRecord{On: true, SinceMs: 3})
	if err != nil || string(b) != `{"on":true,"since":3}` {
		t.Fatalf("a record without drain is %s (%v): nodes that predate drain must read it", b, err)
	}
	r, err := DecodeMaintenance([]byte(`{"on":true,"since":3,"drain":true}`))
	if err != nil || !r.Drain {
		t.Fatalf("%+v %v", r, err)
	}
}
