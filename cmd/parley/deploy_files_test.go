package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/parley-bots/parley/internal/testutil/testapp"
)

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testapp.RepoRoot(), name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDockerfile checks the image's recipe: a multi-stage build of a static
// binary, a distroless final stage with a non-root user, the data volume,
// the listen address and port.
func TestDockerfile(t *testing.T) {
	df := readRepoFile(t, "Dockerfile")
	for _, re := range []string{
		`(?m)^FROM golang:\S+ AS build$`,
		`(?m)^ENV CGO_ENABLED=0$`,
		`go build -trimpath -buildvcs=false -ldflags="-s -w -X main.version=\$\{PARLEY_VERSION\}" -o /out/parley ./cmd/parley`,
		`(?m)^FROM gcr.io/distroless/static-debian12:nonroot$`,
		`(?m)^COPY --from=build /out/parley /usr/local/bin/parley$`,
		`(?m)^USER 65532:65532$`,
		`PARLEY_ADDR=0\.0\.0\.0:3000`,
		`PARLEY_DATA_DIR=/data`,
		`(?m)^VOLUME \["/data"\]$`,
		`(?m)^EXPOSE 3000$`,
		`(?m)^ENTRYPOINT \["/usr/local/bin/parley"\]$`,
		`(?m)^CMD \["serve"\]$`,
	} {
		if !regexp.MustCompile(re).MatchString(df) {
			t.Errorf("Dockerfile lacks %s", re)
		}
	}
	// The go build line itself is the CGO_ENABLED=0 build of scripts/test
	// with -trimpath (not repeated here: a cold -trimpath build takes minutes).
}

// TestDockerignore: the build context keeps every file the build needs.
func TestDockerignore(t *testing.T) {
	var patterns []string
	sc := bufio.NewScanner(strings.NewReader(readRepoFile(t, ".dockerignore")))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, strings.TrimPrefix(l, "/"))
		}
	}
	ignored := func(p string) bool {
		parts := strings.Split(p, "/")
		for _, pat := range patterns {
			for i := 1; i <= len(parts); i++ {
				prefix := strings.Join(parts[:i], "/")
				if ok, _ := filepath.Match(pat, prefix); ok {
					return true
				}
				if rest, ok := strings.CutPrefix(pat, "**/"); ok {
					if m, _ := filepath.Match(rest, parts[i-1]); m {
						return true
					}
				}
			}
		}
		return false
	}
	root := testapp.RepoRoot()
	list := exec.Command("go", "list", "-deps", "-f", `{{if .Module}}{{if .Module.Main}}{{range .GoFiles}}{{$.Dir}}/{{.}}
{{end}}{{range .EmbedFiles}}{{$.Dir}}/{{.}}
{{end}}{{end}}{{end}}`, "./cmd/parley")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	needed := append([]string{filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum")}, strings.Fields(string(out))...)
	if len(needed) < 20 {
		t.Fatalf("go list found only %d files", len(needed))
	}
	absRoot, _ := filepath.Abs(root)
	for _, f := range needed {
		rel, err := filepath.Rel(absRoot, f)
		if err != nil {
			t.Fatal(err)
		}
		if ignored(filepath.ToSlash(rel)) {
			t.Errorf(".dockerignore leaves out %s, which the build needs", rel)
		}
	}
	for _, p := range []string{".git/config", "web/node_modules/x/index.js", "parley-data/parley.db", "tests/compat/chat.mjs"} {
		if !ignored(p) {
			t.Errorf(".dockerignore sends %s to the build", p)
		}
	}
}

// TestDockerBuild builds and smoke-tests the image with
// scripts/docker-build-check when a container engine answers.
func TestDockerBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a container image")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skipf("no container engine (docker info: %v): the image is not built", err)
	}
	cmd := exec.Command(filepath.Join(testapp.RepoRoot(), "scripts", "docker-build-check"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "docker-build-check: ok") {
		t.Fatalf("docker-build-check: %v\n%s", err, out)
	}
}

// TestSystemdUnit checks deploy/parley.service: a non-root dynamic user,
// the data in its state directory, hardening; and systemd-analyze verify
// accepts it when available.
func TestSystemdUnit(t *testing.T) {
	unit := readRepoFile(t, "deploy/parley.service")
	for _, line := range []string{
		"ExecStart=/usr/local/bin/parley serve", "DynamicUser=yes", "StateDirectory=parley",
		"Environment=PARLEY_DATA_DIR=%S/parley", "Environment=PARLEY_ADDR=127.0.0.1:3000", "EnvironmentFile=-/etc/parley/parley.env",
		"NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes", "CapabilityBoundingSet=",
		"RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX", "SystemCallFilter=@system-service", "KillSignal=SIGTERM",
		"WantedBy=multi-user.target",
	} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(line) + `$`).MatchString(unit) {
			t.Errorf("parley.service lacks %q", line)
		}
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed: the unit is not verified")
	}
	// verify wants ExecStart to exist.
	f := filepath.Join(t.TempDir(), "parley.service")
	bin, _ := os.Executable()
	os.WriteFile(f, []byte(strings.ReplaceAll(unit, "/usr/local/bin/parley", bin)), 0o644)
	out, err := exec.Command(analyze, "verify", f).CombinedOutput()
	if err != nil || strings.Contains(string(out), "parley.service") {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
