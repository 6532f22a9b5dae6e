package main

import "github.com/spf13/cobra"

// Placeholder until this command lands; its owner replaces this file.
func newDevCmd() *cobra.Command { return &cobra.Command{Use: "newDevCmd", Hidden: true} }
