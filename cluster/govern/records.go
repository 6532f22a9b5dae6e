package govern

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Governance record kinds this package owns in the regional ledger's
// governance state (fsm.Policy, changed by PolicySet through Raft).
const (
	// KindBreaker: one record per (tenant, job type) whose breaker left
	// closed at least once; key BreakerKey(tenant, type), the tenant's.
	KindBreaker = "breaker"
	// KindMaintenance: one record per region in maintenance (or that
	// was), key the region; and the cluster-wide mode under
	// ClusterMaintenanceKey, in the global ledger (set by an operator)
	// and in every regional ledger (the global leader's copy of it).
	KindMaintenance = "maintenance"
)

// ClusterMaintenanceKey is the key of the cluster-wide maintenance
// record. It holds a "-", which no region code does (fsm.IsRegion), so it
// never names a region's own record.
const ClusterMaintenanceKey = "cluster-wide"

// MaxRecordBytes bounds a record's value as this package decodes it (the
// ledger's own bound, fsm.MaxPolicyValueBytes, is larger).
const MaxRecordBytes = 2048

// MaxWhyBytes bounds a breaker record's reason (longer ones are cut).
const MaxWhyBytes = 512

// BreakerKey is a breaker's record key: "{tenant}/{job_type}". Tenant
// names and job types have no "/", so the key splits back unambiguously.
func BreakerKey(tenant, jobType string) string { return tenant + "/" + jobType }

// SplitBreakerKey is BreakerKey's inverse.
func SplitBreakerKey(key string) (tenant, jobType string, ok bool) {
	tenant, jobType, ok = strings.Cut(key, "/")
	return tenant, jobType, ok && tenant != "" && jobType != "" && !strings.Contains(jobType, "/")
}

// BreakerRecord is a breaker's replicated state.
type BreakerRecord struct {
	State   string `json:"state"` // BreakerState's name
	SinceMs int64  `json:"since"` // Unix ms it began
	Forced  bool   `json:"forced,omitempty"`
	// Why it moved: the automatic transition's reason, or the operator's.
	Why string `json:"why,omitempty"`
}

// MaintenanceRecord is a maintenance mode: a region's own, or the
// cluster's. Drain (only with On) also takes running workflows back from
// their workers; omitted when false, so a record without it reads the
// same on a node that predates it.
type MaintenanceRecord struct {
	On      bool  `json:"on"`
	SinceMs int64 `json:"since"`
	Drain   bool  `json:"drain,omitempty"`
}

// EncodeBreaker returns r's canonical value.
func EncodeBreaker(r BreakerRecord) ([]byte, error) {
	if _, err := ParseBreakerState(r.State); err != nil {
		return nil, err
	}
	if r.State != BreakerOpen.String() && r.Forced {
		return nil, fmt.Errorf("breaker record: only an open breaker is forced")
	}
	r.Why = truncateRunes(r.Why, MaxWhyBytes)
	return json.Marshal(r)
}

// DecodeBreaker reads a breaker record's value: bounded, strict (unknown
// fields refused), checked.
func DecodeBreaker(b []byte) (BreakerRecord, BreakerState, error) {
	var r BreakerRecord
	if err := decodeStrict(b, &r); err != nil {
		return r, 0, fmt.Errorf("breaker record: %w", err)
	}
	s, err := ParseBreakerState(r.State)
	if err != nil {
		return r, 0, fmt.Errorf("breaker record: %w", err)
	}
	if r.SinceMs < 0 || (r.Forced && s != BreakerOpen) || len(r.Why) > MaxWhyBytes {
		return r, 0, fmt.Errorf("breaker record: since %d, forced %v in state %s", r.SinceMs, r.Forced, s)
	}
	return r, s, nil
}

// EncodeMaintenance returns r's canonical value.
func EncodeMaintenance(r MaintenanceRecord) ([]byte, error) {
	if r.Drain && !r.On {
		return nil, fmt.Errorf("maintenance record: drain without maintenance")
	}
	if r.SinceMs < 0 {
		return nil, fmt.Errorf("maintenance record: since %d", r.SinceMs)
	}
	return json.Marshal(r)
}

// DecodeMaintenance reads a maintenance record's value.
func DecodeMaintenance(b []byte) (MaintenanceRecord, error) {
	var r MaintenanceRecord
	if err := decodeStrict(b, &r); err != nil {
		return r, fmt.Errorf("maintenance record: %w", err)
	}
	if r.SinceMs < 0 || (r.Drain && !r.On) {
		return r, fmt.Errorf("maintenance record: since %d, drain %v while on %v", r.SinceMs, r.Drain, r.On)
	}
	return r, nil
}

func decodeStrict(b []byte, v any) error {
	if len(b) > MaxRecordBytes {
		return fmt.Errorf("%d bytes, limit %d", len(b), MaxRecordBytes)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("trailing data")
	}
	return nil
}

func truncateRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
