package main

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHealthHost(t *testing.T) {
	tests := []struct{ name, listen, want string }{
		{"unset", "", defaultHealthAddr},
		{"ip", "10.1.2.3:7100", "10.1.2.3:7100"},
		{"hostname", "use1-gate1:7100", "use1-gate1:7100"},
		{"all interfaces v4", "0.0.0.0:7100", "127.0.0.1:7100"},
		{"all interfaces v6", "[::]:7100", "127.0.0.1:7100"},
		{"no host", ":7100", "127.0.0.1:7100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := healthHost(tt.listen); got != tt.want {
				t.Errorf("healthHost(%q) = %q, want %q", tt.listen, got, tt.want)
			}
		})
	}
}

// TestHealth_ExitCodes: 0 on a 2xx answer, 1 on any other answer and when
// nothing listens.
func TestHealth_ExitCodes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/livez":
			w.WriteHeader(http.StatusOK)
		default:
			http.Error(w, "not ready", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()

	tests := []struct {
		name string
		args []string
		want int
	}{
		{"live", []string{"health", "--url", srv.URL + "/livez"}, exitOK},
		{"not ready", []string{"health", "--url", srv.URL + "/readyz"}, exitError},
		{"nothing listening", []string{"health", "--url", deadURL + "/livez", "--timeout", "2s"}, exitError},
		{"env address and path", []string{"health", "--path", "/livez"}, exitOK},
		{"bad url", []string{"health", "--url", "http://%zz"}, exitUsage},
	}
	t.Setenv("STRATA_HTTP_ADDR", strings.TrimPrefix(srv.URL, "http://"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(tt.args); got != tt.want {
				t.Errorf("strata %v exit %d, want %d", tt.args, got, tt.want)
			}
		})
	}
}

// TestHealth_TLSNode: with a CA (flag, STRATA_CA_FILE or the agent's own
// STRATA_TLS_CA_FILE) the probe is https and trusts that CA only.
func TestHealth_TLSNode(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(srv.URL, "https://")
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want int
	}{
		{"flag", nil, []string{"health", "--ca-file", ca}, exitOK},
		{"STRATA_CA_FILE", map[string]string{envCAFile: ca}, []string{"health"}, exitOK},
		{"the agent's tls ca", map[string]string{envHealthTLSCA: ca}, []string{"health"}, exitOK},
		{"url given, with the ca", nil, []string{"health", "--url", srv.URL + "/livez", "--ca-file", ca}, exitOK},
		{"no ca: plain http to a TLS port", nil, []string{"health"}, exitError},
		{"https without the ca: system roots refuse it", nil, []string{"health", "--url", srv.URL + "/livez"}, exitError},
		{"unreadable ca", nil, []string{"health", "--ca-file", ca + ".missing"}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("STRATA_HTTP_ADDR", addr)
			t.Setenv(envCAFile, "")
			t.Setenv(envHealthTLSCA, "")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			if got := run(tt.args); got != tt.want {
				t.Errorf("strata %v exit %d, want %d", tt.args, got, tt.want)
			}
		})
	}
}
