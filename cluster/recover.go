package cluster

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
)

// RecoverGroup rewrites a stopped node's Raft state so that its group is
// servers alone (strata raft recover): for a group that lost its majority
// for good. The node's ledger is opened as at start and takes the log's
// entries it had not applied. Run it on every surviving server of the
// group with the same servers, then start them; they elect a leader among
// themselves. Writes that only the lost servers had committed are gone.
func RecoverGroup(cfg NodeConfig, servers []group.Server) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if len(servers) == 0 {
		return errors.New("recover: name the surviving servers")
	}
	found := false
	for _, s := range servers {
		found = found || s.ID == cfg.NodeID
	}
	if !found {
		return fmt.Errorf("recover: the servers must include this node, %s", cfg.NodeID)
	}
	st, err := boltstore.Open(boltstore.Config{Path: filepath.Join(cfg.DataDir, "ledger.db")})
	if err != nil {
		return fmt.Errorf("recover: ledger store (is the node stopped?): %w", err)
	}
	defer st.Close()
	led, err := fsm.New(fsm.Config{Store: st, Admission: admissionHook(roleOf(cfg).gate), Meter: meterHook(roleOf(cfg).gate)})
	if err != nil {
		return err
	}
	f, err := group.NewFSM(group.FSMConfig{Ledger: led})
	if err != nil {
		return err
	}
	return group.Recover(cfg.NodeID, roleOf(cfg).kind, filepath.Join(cfg.DataDir, "raft"), f, servers)
}
