package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/strata-ledger/strata/cluster"
	"github.com/strata-ledger/strata/transport/api"
)

// newKeyringCmd is `strata keyring`: the cluster's gossip keyring, as
// `consul keyring`. A rotation with no downtime is install NEW, use NEW,
// remove OLD, each run to completion (every node answers) before the next.
func newKeyringCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keyring",
		Short: "List, install, use and remove gossip encryption keys on every node",
		Long: `Manage the gossip keyring of every node of the cluster (operator token).

Rotate a key with no downtime:
  strata keyring install NEW   # every node can now read NEW
  strata keyring use NEW       # every node now writes with NEW
  strata keyring remove OLD    # OLD is gone

Run each step until every node reports success. A node keeps its keyring
in DATA_DIR/gossip.keyring, so a restart keeps the rotation.
"strata keyring generate" prints a new random key.`,
	}
	f := addClientFlags(cmd)
	op := func(name, short string) *cobra.Command {
		use := name + " KEY"
		args := cobra.ExactArgs(1)
		if name == api.KeyringList {
			use, args = name, cobra.NoArgs
		}
		return &cobra.Command{Use: use, Short: short, Args: args, RunE: func(cmd *cobra.Command, a []string) error {
			req := api.KeyringRequest{Op: name}
			if len(a) == 1 {
				if _, err := cluster.DecodeGossipKey(a[0]); err != nil {
					return usageError{fmt.Errorf("key: %w", err)}
				}
				req.Key = a[0]
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			out, err := c.Keyring(cmd.Context(), req)
			if err != nil {
				return err
			}
			if f.json() {
				b, err := json.Marshal(out)
				if err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), b)
			}
			return printKeyring(cmd, name, out)
		}}
	}
	gen := &cobra.Command{Use: "generate", Short: "Print a new random gossip key (base64, 32 bytes)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var k [cluster.GossipKeyBytes]byte
			if _, err := rand.Read(k[:]); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), base64.StdEncoding.EncodeToString(k[:]))
			return nil
		}}
	cmd.AddCommand(op(api.KeyringList, "List the keys of every node"),
		op(api.KeyringInstall, "Add KEY to every node's keyring"),
		op(api.KeyringUse, "Make KEY the primary key of every node"),
		op(api.KeyringRemove, "Remove KEY from every node's keyring (not the primary)"),
		gen)
	return cmd
}

// printKeyring prints, per key, how many nodes hold it and use it, then
// every node's error; it fails if any node failed.
func printKeyring(cmd *cobra.Command, op string, out api.KeyringResponse) error {
	w := cmd.OutOrStdout()
	held, primary := map[string]int{}, map[string]int{}
	var failed []string
	for _, n := range out.Nodes {
		for _, k := range n.Keys {
			held[k]++
		}
		if n.Primary != "" {
			primary[n.Primary]++
		}
		if n.Error != "" {
			failed = append(failed, fmt.Sprintf("%s (%s): %s", n.NodeID, n.Region, n.Error))
		}
	}
	keys := make([]string, 0, len(held))
	for k := range held {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(w, "%s: %d nodes answered\n", op, len(out.Nodes))
	t := newTable(w, "KEY", "NODES", "PRIMARY ON")
	for _, k := range keys {
		t.row(k, fmt.Sprintf("%d/%d", held[k], len(out.Nodes)), fmt.Sprint(primary[k]))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(failed) > 0 {
		return errors.New("some nodes failed:\n  " + strings.Join(failed, "\n  "))
	}
	return nil
}
