package livestats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

// Push is the body of POST Path: one manager's samples of one flush.
type Push struct {
	Node    string   `json:"node"`
	Region  string   `json:"region"`
	Samples []Sample `json:"samples"`
}

// Decode reads and checks a push body (at most MaxPushBytes, checked by
// the caller's reader): unknown fields, a bad node or region name, too
// many samples, a bad job id or an interval outside (0, MaxInterval] are
// refused, so nothing malformed reaches a Board.
func Decode(body []byte) (*Push, error) {
	if len(body) > MaxPushBytes {
		return nil, fmt.Errorf("livestats: push of %d bytes, limit %d", len(body), MaxPushBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var p Push
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("livestats: push: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("livestats: push: data after the object")
	}
	return &p, p.Validate()
}

// Validate checks a push as Decode does.
func (p *Push) Validate() error {
	switch {
	case !fsm.IsName(p.Node):
		return fmt.Errorf("livestats: node %q is not a name", p.Node)
	case !fsm.IsRegion(p.Region):
		return fmt.Errorf("livestats: region %q is not a region", p.Region)
	case len(p.Samples) > MaxSamplesPerPush:
		return fmt.Errorf("livestats: %d samples, limit %d", len(p.Samples), MaxSamplesPerPush)
	}
	for i, s := range p.Samples {
		if _, err := fsm.ParseJobID(s.Job); err != nil {
			return fmt.Errorf("livestats: samples[%d]: %w", i, err)
		}
		if s.Interval <= 0 || s.Interval > MaxInterval {
			return fmt.Errorf("livestats: samples[%d]: interval %s outside (0, %s]", i, s.Interval, time.Duration(MaxInterval))
		}
		if s.Failed > s.Requests {
			return fmt.Errorf("livestats: samples[%d]: %d failed of %d requests", i, s.Failed, s.Requests)
		}
	}
	return nil
}
