package main

import (
	"testing"

	"github.com/strata-ledger/strata/transport/api"
)

func TestOpenAPICmd_PrintsTheDocument(t *testing.T) {
	out, errOut, code := runCLI(t, "", "openapi")
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if out != string(api.OpenAPI()) {
		t.Errorf("printed %d bytes, not the %d of the document", len(out), len(api.OpenAPI()))
	}
	if _, _, code := runCLI(t, "", "openapi", "extra"); code != exitUsage {
		t.Errorf("an argument: exit %d, want %d", code, exitUsage)
	}
}
