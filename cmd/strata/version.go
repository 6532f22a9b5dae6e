package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set at link time by the Makefile (-X main.commit=... -X main.version=...).
var (
	version = ""
	commit  = ""
)

// buildVersion reports the module version and commit, falling back to what
// the Go toolchain embedded when the linker flags were not given.
func buildVersion() (ver, rev string) {
	ver, rev = version, commit
	if info, ok := debug.ReadBuildInfo(); ok {
		if ver == "" {
			ver = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && rev == "" {
				rev = s.Value
			}
		}
	}
	if ver == "" {
		ver = "(devel)"
	}
	if rev == "" {
		rev = "unknown"
	}
	return ver, rev
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the module version and commit",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ver, rev := buildVersion()
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "strata %s commit %s\n", ver, rev)
			return err
		},
	}
}
