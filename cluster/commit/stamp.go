package commit

import (
	"crypto/rand"
	"errors"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// Stamper is the one place that gives events their origin before they
// enter the pipeline: an event id, an HLC reading of this node's clock,
// this node's id and region. Every HLC it hands out is newer than every
// one before it (the clock's), so the events a node stamps order after
// what it saw. Safe for concurrent use.
type Stamper struct {
	clock  *hlc.Clock
	node   string
	region string
}

// NewStamper returns the stamper of node (in region) over clock.
func NewStamper(clock *hlc.Clock, node, region string) (*Stamper, error) {
	if clock == nil || node == "" || region == "" {
		return nil, errors.New("cluster: stamper: clock, node and region are required")
	}
	return &Stamper{clock: clock, node: node, region: region}, nil
}

// NewEventID returns a fresh event id: for an event that is no decision
// another node could take again (decisions get deterministic ids from the
// planners, submits with an idempotency key from the key). It is
// time-ordered (fsm.TimeOrderedEventID: this node's wall clock in ms, then
// 80 random bits), so the ids a node makes increase and the ledger's id
// index appends rather than scatters (issue 19).
func NewEventID() fsm.EventID {
	var r [10]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails
	return fsm.TimeOrderedEventID(time.Now().UnixMilli(), r)
}

// Now reads the node's clock: the HLC of an event stamped by hand (a
// job's creation, which takes its id and HLC together).
func (s *Stamper) Now() (hlc.Timestamp, error) { return s.clock.Now() }

// Created stamps a job's JobCreated: this node and region, and ts, the
// HLC its job id was made with (a JobIDGenerator over Now), so the id and
// the event agree on when the job was created.
func (s *Stamper) Created(e *fsm.Event, ts hlc.Timestamp) {
	e.HLC, e.Node, e.Region = ts, s.node, s.region
}

// Own stamps an event this node originates: a fresh id, this node, a new
// HLC, and this node's region unless e names one.
func (s *Stamper) Own(e *fsm.Event) error {
	ts, err := s.clock.Now()
	if err != nil {
		return err
	}
	e.ID, e.Node, e.HLC = NewEventID(), s.node, ts
	if e.Region == "" {
		e.Region = s.region
	}
	return nil
}

// Received fills in what a client left out of an event it sent: an id,
// this node and region, an HLC reading. An HLC the client gave is kept and
// moves the clock past it (an error when it is too far ahead).
func (s *Stamper) Received(e *fsm.Event) error {
	if e.ID.IsZero() {
		e.ID = NewEventID()
	}
	if e.Region == "" {
		e.Region = s.region
	}
	if e.Node == "" {
		e.Node = s.node
	}
	if e.HLC == (hlc.Timestamp{}) {
		var err error
		e.HLC, err = s.clock.Now()
		return err
	}
	_, err := s.clock.Update(e.HLC)
	return err
}

// Planned stamps events a planner decided (their ids are the planner's):
// this node and region and increasing HLCs, after moving the clock past
// after (zero: no move), so they order after what they react to.
func (s *Stamper) Planned(events []fsm.Event, after hlc.Timestamp) error {
	if after.WallMs > 0 {
		if _, err := s.clock.Update(after); err != nil {
			return err
		}
	}
	for i := range events {
		ts, err := s.clock.Now()
		if err != nil {
			return err
		}
		events[i].HLC, events[i].Region, events[i].Node = ts, s.region, s.node
	}
	return nil
}
