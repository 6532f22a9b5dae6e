package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/strata-ledger/strata/cluster/backup"
)

func newSnapshotCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Save a node's ledger snapshot, or inspect one offline",
	}
	cmd.AddCommand(newSnapshotSaveCmd(), newSnapshotInspectCmd(), newSnapshotRestoreCmd())
	return cmd
}

func newSnapshotSaveCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "save -o FILE",
		Short: "Write the answering node's ledger snapshot to FILE (GET /v1/snapshot, operator token)",
		Args:  cobra.NoArgs,
	}
	f := addTargetFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if out == "" {
			return usageError{errors.New("save: -o FILE is required")}
		}
		c, err := f.client()
		if err != nil {
			return err
		}
		var group string
		var n int64
		if err := writeAtomically(out, func(w io.Writer) error {
			var err error
			group, n, err = c.Snapshot(cmd.Context(), w)
			return err
		}); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: group %s, %d bytes\n", out, group, n)
		return nil
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "the file to write (required)")
	return cmd
}

func newSnapshotRestoreCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "restore FILE --addr LEADER",
		Short: "Disaster recovery: make a group take on a snapshot (POST /v1/snapshot at its leader, operator token)",
		Long: `Send FILE (strata snapshot save, or a backup of the group) to the group's
leader, which proves it by a restore into a scratch store, then hands it to
Raft: every member takes on its state, and the group's writes since the
snapshot are gone. Only for recovery.`,
		Args: cobra.ExactArgs(1),
	}
	f := addTargetFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c, err := f.client()
		if err != nil {
			return err
		}
		file, err := os.Open(args[0])
		if err != nil {
			return err
		}
		defer file.Close()
		res, err := c.RestoreSnapshot(cmd.Context(), file)
		if err != nil {
			return fmt.Errorf("restore %s: %w", args[0], err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "group %s restored to the snapshot at index %d (digest %s)\n", res.Group, res.SnapshotIndex, res.Digest)
		return nil
	}
	return cmd
}

func newSnapshotInspectCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "inspect FILE",
		Short: "Check a snapshot's checksums by restoring it into a scratch store, and show what it holds",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			info, err := backup.Inspect(args[0])
			if err != nil {
				return err
			}
			t := newTable(cmd.OutOrStdout())
			t.row("kind", info.Kind)
			t.row("applied_index", strconv.FormatUint(info.Index, 10))
			t.row("jobs", strconv.Itoa(info.Jobs))
			t.row("workflows", strconv.Itoa(info.Workflows))
			t.row("tenants", strconv.Itoa(info.Tenants))
			t.row("digest", info.Digest.String())
			t.row("checksum", "verified")
			return t.flush()
		},
	}
}
