package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDev_BadOptionsAreUsageErrorsAndCreateNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dev")
	tests := []struct {
		name string
		args []string
	}{
		{"subnet past 255", []string{"dev", "--data", dir, "--subnet", "300"}},
		{"bad log level", []string{"dev", "--data", dir, "--log-level", "loud"}},
		{"negative wan latency", []string{"dev", "--data", dir, "--wan-latency", "-1s"}},
		{"stray argument", []string{"dev", "--data", dir, "extra"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(tt.args); got != exitUsage {
				t.Fatalf("exit %d, want %d", got, exitUsage)
			}
			if _, err := os.Stat(dir); err == nil {
				t.Fatalf("%s was created", dir)
			}
		})
	}
}
