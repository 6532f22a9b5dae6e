package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strata-ledger/strata/cluster"
	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/transport/api"
)

func newMembersCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "members",
		Short: "List the cluster's nodes as gossip sees them",
		Args:  cobra.NoArgs,
	}
	f := addClientFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c, err := f.client()
		if err != nil {
			return err
		}
		ml, meta, err := c.Members(cmd.Context())
		if err != nil {
			return err
		}
		if f.json() {
			return printJSON(cmd.OutOrStdout(), meta.Body)
		}
		t := newTable(cmd.OutOrStdout(), "NODE", "ROLE", "REGION", "STATUS", "API", "RAFT", "DATA", "VERSION")
		for _, m := range ml.Members {
			t.row(m.NodeID, m.Role, m.Region, m.Status, orDash(m.APIAddr), orDash(m.RaftAddr), orDash(m.DataAddr), orDash(m.Version))
		}
		return t.flush()
	}
	return cmd
}

func newRaftCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "raft",
		Short: "Inspect Raft groups and change their membership and leadership",
	}
	f := addClientFlags(cmd)
	cmd.AddCommand(newRaftPeersCmd(f), newRaftJoinCmd(f), newRaftRemoveCmd(f), newRaftTransferCmd(f), newRaftRecoverCmd())
	return cmd
}

func newRaftPeersCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "peers",
		Short: "Show each Raft group of the answering node: state, leader, term, indexes, peers, WAL watermarks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			rs, meta, err := c.RaftStatus(cmd.Context())
			if err != nil {
				return err
			}
			if f.json() {
				return printJSON(cmd.OutOrStdout(), meta.Body)
			}
			return printRaftStatus(cmd.OutOrStdout(), rs)
		},
	}
}

// printRaftStatus writes one row per group. Peers are marked * for the
// leader and carry their suffrage unless voter.
func printRaftStatus(w io.Writer, rs *api.RaftStatus) error {
	t := newTable(w, "NODE", "GROUP", "TIER", "STATE", "LEADER", "TERM", "COMMIT/APPLIED", "LAST_CONTACT", "PEERS", "WATERMARKS")
	for _, g := range rs.Groups {
		peers := make([]string, 0, len(g.Peers))
		for _, p := range g.Peers {
			s := p.ID
			if p.Leader {
				s += "*"
			}
			if p.Suffrage != "" && p.Suffrage != "voter" {
				s += "(" + p.Suffrage + ")"
			}
			peers = append(peers, s)
		}
		marks := make([]string, 0, len(g.Watermarks))
		for _, k := range slices.Sorted(maps.Keys(g.Watermarks)) {
			marks = append(marks, fmt.Sprintf("%s=%d", k, g.Watermarks[k]))
		}
		t.row(rs.Node, g.Name, g.Tier, g.State, orDash(g.Leader), g.Term,
			fmt.Sprintf("%d/%d", g.CommitIndex, g.AppliedIndex), fmt.Sprintf("%dms", g.LastContactMs),
			orDash(strings.Join(peers, ",")), orDash(strings.Join(marks, " ")))
	}
	return t.flush()
}

func newRaftJoinCmd(f *clientFlags) *cobra.Command {
	var req api.JoinRequest
	cmd := &cobra.Command{
		Use:   "join NODE_ID RAFT_ADDR",
		Short: "Add a server to the answering node's Raft group (a voter unless --non-voter)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.NodeID, req.RaftAddr = args[0], args[1]
			return runOperator(cmd, f, func(c *api.Client) (*api.OperatorResponse, api.ResponseMeta, error) {
				return c.JoinRaft(cmd.Context(), req)
			})
		},
	}
	cmd.Flags().BoolVar(&req.NonVoter, "non-voter", false, "join as a non-voter (replicates, does not vote)")
	return cmd
}

func newRaftRemoveCmd(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "remove NODE_ID",
		Short: "Remove a server from the answering node's Raft group",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOperator(cmd, f, func(c *api.Client) (*api.OperatorResponse, api.ResponseMeta, error) {
				return c.RemoveRaftPeer(cmd.Context(), args[0])
			})
		},
	}
}

func newRaftTransferCmd(f *clientFlags) *cobra.Command {
	var req api.TransferRequest
	cmd := &cobra.Command{
		Use:   "transfer-leadership",
		Short: "Move the leadership of the answering node's Raft group (to --to, or the most up-to-date follower)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runOperator(cmd, f, func(c *api.Client) (*api.OperatorResponse, api.ResponseMeta, error) {
				return c.TransferLeadership(cmd.Context(), req)
			})
		},
	}
	cmd.Flags().StringVar(&req.To, "to", "", "node id of the new leader")
	return cmd
}

// runOperator runs a membership or leadership change and prints its answer.
func runOperator(cmd *cobra.Command, f *clientFlags, call func(*api.Client) (*api.OperatorResponse, api.ResponseMeta, error)) error {
	c, err := f.client()
	if err != nil {
		return err
	}
	resp, meta, err := call(c)
	if err != nil {
		return err
	}
	if f.json() {
		return printJSON(cmd.OutOrStdout(), meta.Body)
	}
	t := newTable(cmd.OutOrStdout())
	t.row("group", orDash(resp.Group))
	t.row("leader", orDash(resp.Leader))
	t.row("index", resp.Index)
	return t.flush()
}

func newRaftRecoverCmd() *cobra.Command {
	var configPath string
	var peers []string
	cmd := &cobra.Command{
		Use:   "recover --config node.yaml --peers ID=RAFT_ADDR[,ID=RAFT_ADDR...]",
		Short: "Offline: make a stopped node's group just the surviving servers (a group that lost its majority for good)",
		Long: `Rewrite a stopped node's Raft state so that its group's configuration is the
servers named by --peers, as Consul's peers.json does: for a group that lost
its majority for good. Run it on every surviving server with the same
--peers, then start them; they elect a leader among themselves. Writes only
the lost servers had committed are gone. The node's ledger takes the log's
entries it had not applied first. Needs no cluster; the node must be
stopped.`,
		Example: `  strata raft recover --config /etc/strata/use1-gate1.yaml --peers use1-gate1=10.0.1.1:7200`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configPath == "" || len(peers) == 0 {
				return usageError{errors.New("recover: --config and --peers are required")}
			}
			var servers []group.Server
			for _, p := range splitList(peers) {
				id, addr, ok := strings.Cut(p, "=")
				if !ok || id == "" || addr == "" {
					return usageError{fmt.Errorf("recover: --peers %q: want ID=RAFT_ADDR", p)}
				}
				servers = append(servers, group.Server{ID: id, Addr: addr})
			}
			fs := pflag.NewFlagSet("recover", pflag.ContinueOnError)
			addNodeFlags(fs)
			if err := fs.Set("config", configPath); err != nil {
				return err
			}
			cfg, err := loadNodeConfig(fs, os.Environ())
			if err != nil {
				return err
			}
			if err := cluster.RecoverGroup(cfg, servers); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: its group is now %d server(s); start the node\n", cfg.NodeID, len(servers))
			return nil
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "the stopped node's config file (required)")
	cmd.Flags().StringSliceVar(&peers, "peers", nil, "the surviving servers, ID=RAFT_ADDR, comma-separated (required)")
	return cmd
}
