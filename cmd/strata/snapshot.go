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
	var group string
	cmd := &cobra.Command{
		Use:   "restore FILE --addr LEADER [--group NAME]",
		Short: "Disaster recovery: make a group take on a snapshot (POST /v1/snapshot at its leader, operator token)",
		Long: `Send FILE (strata snapshot save, or a backup of the group) to the group's
leader, which proves it by a restore into a scratch store, then hands it to
Raft: every member takes on its state, and the group's writes since the
snapshot are gone. Only for recovery.

The leader refuses a snapshot of another group (the file names its group:
strata snapshot inspect shows it). A snapshot written before snapshots
named their group is restored only with --group NAME, your word that it is
of the target's group: it is sent behind an envelope naming NAME.`,
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
		body, err := restoreBody(file, group)
		if err != nil {
			return fmt.Errorf("restore %s: %w", args[0], err)
		}
		defer body.Close() // ends the envelope's writer if the leader did not read it all
		res, err := c.RestoreSnapshot(cmd.Context(), body)
		if err != nil {
			return fmt.Errorf("restore %s: %w", args[0], err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "group %s restored to the snapshot at index %d (digest %s)\n", res.Group, res.SnapshotIndex, res.Digest)
		return nil
	}
	cmd.Flags().StringVar(&group, "group", "", "for a snapshot that names no group: the group it is of (the target's)")
	return cmd
}

// restoreBody is what restore sends of file: the file itself, or, for a
// bare ledger snapshot and --group, the file behind an envelope naming
// group. --group naming another group than the file's is refused here.
func restoreBody(file *os.File, group string) (io.ReadCloser, error) {
	env, _, enveloped, err := backup.ReadEnvelope(file)
	switch {
	case err != nil:
		return nil, err
	case enveloped && group != "" && group != env.Group:
		return nil, fmt.Errorf("the snapshot is of group %s, not %s", env.Group, group)
	case enveloped || group == "":
		return io.NopCloser(file), nil // the leader refuses a bare snapshot without ?group=
	}
	if err := backup.CheckGroupName(group); err != nil {
		return nil, usageError{err}
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(backup.WriteEnveloped(pw, group, 0, func(w io.Writer) error {
			_, err := io.Copy(w, file)
			return err
		}))
	}()
	return pr, nil
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
			group, term := info.Group, strconv.FormatUint(info.Term, 10)
			if group == "" {
				group, term = "- (none: written before snapshots named their group)", "-"
			}
			t := newTable(cmd.OutOrStdout())
			t.row("group", group)
			t.row("index", strconv.FormatUint(info.Index, 10))
			t.row("term", term)
			t.row("jobs", strconv.Itoa(info.Jobs))
			t.row("tenants", strconv.Itoa(info.Tenants))
			t.row("digest", info.Digest.String())
			t.row("checksum", "verified")
			t.row("workflows", strconv.Itoa(info.Workflows))
			t.row("kind", info.Kind)
			return t.flush()
		},
	}
}
