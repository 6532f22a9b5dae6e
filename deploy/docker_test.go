package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDockerfile checks the image's contract offline (`make image` builds
// it; building needs Docker): an empty base, the static binary, a numeric
// non-root user that /etc/passwd names, a /data volume and a health check
// that needs no shell.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("docker/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string // instructions, continuation lines joined
	cur := ""
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if c, ok := strings.CutSuffix(line, "\\"); ok {
			cur += c + " "
			continue
		}
		lines = append(lines, cur+line)
		cur = ""
	}
	has := func(re string) bool {
		r := regexp.MustCompile(re)
		for _, l := range lines {
			if r.MatchString(l) {
				return true
			}
		}
		return false
	}
	for _, want := range []struct{ what, re string }{
		{"an empty base", `^FROM scratch$`},
		{"the binary", `^COPY strata /strata$`},
		{"passwd and group", `^COPY passwd group /etc/$`},
		{"the numeric non-root user", `^USER 65532:65532$`},
		{"the data volume", `^VOLUME \["/data"\]$`},
		{"the data dir setting", `STRATA_DATA_DIR=/data`},
		{"a health check by the binary itself", `^HEALTHCHECK .*CMD \["/strata", "health", "--path", "/livez"\]$`},
		{"the binary as entrypoint", `^ENTRYPOINT \["/strata"\]$`},
		{"the API port", `^EXPOSE .*\b7100/tcp\b`},
	} {
		if !has(want.re) {
			t.Errorf("Dockerfile lacks %s (%s)", want.what, want.re)
		}
	}
	if !strings.HasPrefix(lines[0], "FROM ") || has(`^FROM (?:[^s]|s[^c])`) {
		t.Errorf("Dockerfile must build FROM scratch only (nothing can be pulled): %q", lines[0])
	}
	passwd, err := os.ReadFile("docker/passwd")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^strata:x:65532:65532:`).Match(passwd) {
		t.Errorf("docker/passwd does not name user 65532")
	}
}
