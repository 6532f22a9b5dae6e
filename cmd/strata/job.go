package main

import "github.com/spf13/cobra"

// Placeholder until this command lands; its owner replaces this file.
func newJobCmd() *cobra.Command     { return &cobra.Command{Use: "newJobCmd", Hidden: true} }
func newMembersCmd() *cobra.Command { return &cobra.Command{Use: "newMembersCmd", Hidden: true} }
func newRaftCmd() *cobra.Command    { return &cobra.Command{Use: "newRaftCmd", Hidden: true} }
