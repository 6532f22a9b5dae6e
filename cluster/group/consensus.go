package group

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// What the rest of the node asks of its Raft group, in the group's own
// types, so that no other package imports hashicorp/raft.

// verifyLeaderTimeout bounds the barrier and the quorum round of a strong
// read.
const verifyLeaderTimeout = 5 * time.Second

// ErrUnknownServer is returned for a server id that is not in the group's
// configuration.
var ErrUnknownServer = errors.New("cluster: not a server of the raft group")

// Server is one member of the group's configuration.
type Server struct {
	ID   string
	Addr string // Raft address
	// Suffrage is "voter", "nonvoter" or "staging".
	Suffrage string
}

// Status is a snapshot of the group as this node sees it.
type Status struct {
	State       string // Leader, Follower, Candidate, Shutdown
	Leader      Leader
	Term        uint64
	CommitIndex uint64
	// AppliedIndex is Raft's: the last entry handed to the FSM.
	AppliedIndex uint64
	LastIndex    uint64
	LastContact  time.Duration // 0 on the leader; Never when never heard from
}

// Never is the LastContact of a node that never heard from a leader.
const Never = time.Duration(1<<62 - 1)

// LocalAddr is the Raft address this node listens on.
func (g *Group) LocalAddr() string { return string(g.Transport.LocalAddr()) }

// IsLeader reports whether this node leads the group now.
func (g *Group) IsLeader() bool { return g.Raft.State() == raft.Leader }

// Leader is the leader this node knows of; zero when there is none.
func (g *Group) Leader() Leader {
	addr, id := g.Raft.LeaderWithID()
	return Leader{ID: string(id), Addr: string(addr)}
}

// LastContact is how long ago this node heard from its leader: 0 on the
// leader, Never when it never did.
func (g *Group) LastContact() time.Duration {
	if g.IsLeader() {
		return 0
	}
	lc := g.Raft.LastContact()
	if lc.IsZero() {
		return Never
	}
	return time.Since(lc)
}

// Status reads the group's state, term and indexes.
func (g *Group) Status() Status {
	return Status{State: g.Raft.State().String(), Leader: g.Leader(), Term: g.Raft.CurrentTerm(),
		CommitIndex: g.Raft.CommitIndex(), AppliedIndex: g.Raft.AppliedIndex(), LastIndex: g.Raft.LastIndex(), LastContact: g.LastContact()}
}

// Servers is the group's current configuration.
func (g *Group) Servers() ([]Server, error) {
	f := g.Raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	var out []Server
	for _, s := range f.Configuration().Servers {
		out = append(out, Server{ID: string(s.ID), Addr: string(s.Address), Suffrage: strings.ToLower(s.Suffrage.String())})
	}
	return out, nil
}

// server finds id in the configuration, or ErrUnknownServer.
func (g *Group) server(id string) (Server, error) {
	servers, err := g.Servers()
	if err != nil {
		return Server{}, err
	}
	for _, s := range servers {
		if s.ID == id {
			return s, nil
		}
	}
	return Server{}, fmt.Errorf("%w: %s", ErrUnknownServer, id)
}

// AddServer adds a voter (or a non-voter) on the leader and returns the
// index of the configuration change once it committed.
func (g *Group) AddServer(id, addr string, voter bool, timeout time.Duration) (uint64, error) {
	var f raft.IndexFuture
	if voter {
		f = g.Raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeout)
	} else {
		f = g.Raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeout)
	}
	if err := f.Error(); err != nil {
		return 0, err
	}
	return f.Index(), nil
}

// HasServer reports whether id is in the configuration.
func (g *Group) HasServer(id string) (bool, error) {
	_, err := g.server(id)
	if errors.Is(err, ErrUnknownServer) {
		return false, nil
	}
	return err == nil, err
}

// RemoveServer removes id on the leader and returns the index of the
// configuration change once it committed.
func (g *Group) RemoveServer(id string, timeout time.Duration) (uint64, error) {
	f := g.Raft.RemoveServer(raft.ServerID(id), 0, timeout)
	if err := f.Error(); err != nil {
		return 0, err
	}
	return f.Index(), nil
}

// TransferLeadership hands leadership to the server to, or to the most
// up-to-date follower when to is empty. ErrUnknownServer when to is not in
// the configuration.
func (g *Group) TransferLeadership(to string) error {
	if to == "" {
		return g.Raft.LeadershipTransfer().Error()
	}
	s, err := g.server(to)
	if err != nil {
		return err
	}
	return g.Raft.LeadershipTransferToServer(raft.ServerID(s.ID), raft.ServerAddress(s.Addr)).Error()
}

// RestoreSnapshot makes the group take on a ledger snapshot of size bytes
// whose header names index (disaster recovery; the leader only). Raft
// keeps its current configuration, puts the snapshot after its last
// index and installs it on the followers. The ledger's applied index
// becomes the snapshot's, below Raft's, so every later entry applies.
func (g *Group) RestoreSnapshot(index uint64, size int64, r io.Reader, timeout time.Duration) error {
	return g.Raft.Restore(&raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: index, Size: size}, r, timeout)
}

// Barrier returns once every entry committed before it is applied here
// (leader only).
func (g *Group) Barrier(timeout time.Duration) error { return g.Raft.Barrier(timeout).Error() }

// ConfirmLeadership makes a strong read linearizable (a read index): the
// first time in a term a Raft barrier makes sure every entry of earlier
// terms is applied here, and every read confirms with a quorum that this
// node still leads, so a partitioned former leader fails instead of
// answering stale.
func (g *Group) ConfirmLeadership(ctx context.Context) error {
	term := g.Raft.CurrentTerm()
	if g.readyTerm.Load() != term {
		g.barrierMu.Lock()
		if g.readyTerm.Load() != term {
			if err := g.Barrier(verifyLeaderTimeout); err != nil {
				g.barrierMu.Unlock()
				return fmt.Errorf("barrier: %w", err)
			}
			g.readyTerm.Store(term)
		}
		g.barrierMu.Unlock()
	}
	ctx, cancel := context.WithTimeout(ctx, verifyLeaderTimeout)
	defer cancel()
	f := g.Raft.VerifyLeader()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no quorum confirmed leadership: %w", ctx.Err())
	}
}

// WatchLeader calls changed after every leader change Raft observes, until
// ctx ends. Changes that arrive while changed runs are folded into one call.
func (g *Group) WatchLeader(ctx context.Context, changed func()) {
	obs := make(chan raft.Observation, 1) // a pending signal covers later ones
	o := raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	g.Raft.RegisterObserver(o)
	defer g.Raft.DeregisterObserver(o)
	for {
		select {
		case <-obs:
			changed()
		case <-ctx.Done():
			return
		}
	}
}
