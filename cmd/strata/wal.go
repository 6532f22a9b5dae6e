package main

import (
	"bufio"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/strata-ledger/strata/wal"
)

// dumpPayloadBytes is how much of each payload `wal dump` prints unless
// --full is given.
const dumpPayloadBytes = 32

func newWALCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "wal",
		Short: "Read a NodeWAL directory (of a stopped node)",
	}
	cmd.AddCommand(newWALDumpCmd(), newWALVerifyCmd())
	return cmd
}

func newWALDumpCmd() *cobra.Command {
	var full bool
	cmd := &cobra.Command{
		Use:   "dump DIR",
		Short: "Print the watermarks and every record of a NodeWAL",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			marks, err := wal.ReadWatermarks(args[0])
			if err != nil {
				return fmt.Errorf("dump %s: %w", args[0], err)
			}
			printWatermarks(out, marks)
			sum, err := wal.Inspect(args[0], func(e wal.Entry) error {
				return printEntry(out, e, full)
			})
			printSummary(out, sum)
			if err != nil {
				return fmt.Errorf("dump %s: %w", args[0], err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&full, "full", false, "print whole payloads")
	return cmd
}

func newWALVerifyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "verify DIR",
		Short: "Check every record's CRC and sequence; exit 1 naming the segment and offset of the first problem",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sum, err := wal.Verify(args[0])
			if err != nil {
				return fmt.Errorf("verify %s: %w", args[0], err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprint(out, "ok: ")
			printSummary(out, sum)
			printWatermarks(out, sum.Watermarks)
			return nil
		},
	}
}

func printWatermarks(out io.Writer, m wal.Watermarks) {
	fmt.Fprintf(out, "watermarks regional=%d global=%d applied=%d compacted=%d\n",
		m.Regional, m.Global, m.Applied, m.Compacted)
}

func printSummary(out io.Writer, s wal.Summary) {
	fmt.Fprintf(out, "%d segments, %d records, LSN %d..%d\n", s.Segments, s.Records, s.FirstLSN, s.LastLSN)
}

func printEntry(out io.Writer, e wal.Entry, full bool) error {
	p, more := e.Payload, ""
	if !full && len(p) > dumpPayloadBytes {
		p, more = p[:dumpPayloadBytes], "..."
	}
	_, err := fmt.Fprintf(out, "lsn=%d state=%s type=%d hlc=%s len=%d payload=%x%s\n",
		e.LSN, e.State, e.Type, e.HLC, len(e.Payload), p, more)
	return err
}
