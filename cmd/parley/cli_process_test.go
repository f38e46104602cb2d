package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// buildStampedBinary builds parley the way a user does, from a git
// checkout: the working tree is copied into a fresh repository with one
// commit (a worktree's .git file is not seen by the go command), so the
// binary carries the module's build information. It returns the binary
// (in a directory any user may read) and the commit.
func buildStampedBinary(t *testing.T) (bin, commit string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := testapp.RepoRoot()
	list, err := exec.Command("git", "-C", root, "ls-files", "-z", "-co", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	src := t.TempDir()
	for _, p := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			continue // deleted in the working tree
		}
		dst := filepath.Join(src, p)
		os.MkdirAll(filepath.Dir(dst), 0o755)
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", src, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "snapshot")
	commit = git("rev-parse", "HEAD")

	dir, err := os.MkdirTemp("", "parley-cli-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin = filepath.Join(dir, "parley")
	cmd := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/parley")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin, commit
}

type result struct {
	stdout, stderr string
	code           int
}

func runBinary(t *testing.T, bin string, asNobody bool, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if asNobody {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		cmd.Dir = "/"
	}
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("parley %v did not exit:\n%s", args, errOut.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errOut.String(), code}
}

// TestCLIBinary runs the real binary for the command line's behaviours:
// exit statuses, a mistyped command, help, version from the build
// information, a short admin token and a read-only data directory.
func TestCLIBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, commit := buildStampedBinary(t)

	t.Run("mistyped command", func(t *testing.T) {
		r := runBinary(t, bin, false, nil, "srve")
		want := "parley: unknown command \"srve\"; did you mean \"serve\"?\nRun \"parley help\" for the list of commands.\n"
		if r.code != 2 || r.stderr != want || r.stdout != "" {
			t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and %q", r.code, r.stdout, r.stderr, want)
		}
	})
	t.Run("help exits 0", func(t *testing.T) {
		for _, args := range [][]string{{"serve", "--help"}, {"serve", "-h"}, {"help"}, {"bot", "deploy", "--help"}, {"token", "create", "-h"}} {
			r := runBinary(t, bin, false, nil, args...)
			if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "sage") {
				t.Errorf("%v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
			}
		}
		if r := runBinary(t, bin, false, nil, "serve", "--no-such-flag"); r.code != 2 {
			t.Errorf("bad flag: exit %d", r.code)
		}
	})
	t.Run("version", func(t *testing.T) {
		r := runBinary(t, bin, false, nil, "version")
		pseudo := regexp.MustCompile(`^parley v0\.0\.0-\d{14}-` + commit[:12] + `\n`)
		if r.code != 0 || !pseudo.MatchString(r.stdout) || !strings.Contains(r.stdout, "\ncommit "+commit+" (") ||
			!strings.Contains(r.stdout, "\nbuilt with go") || strings.Contains(r.stdout, "uncommitted") {
			t.Fatalf("exit %d:\n%s", r.code, r.stdout)
		}
		t.Logf("parley version:\n%s", r.stdout)
	})
	t.Run("short admin token", func(t *testing.T) {
		r := runBinary(t, bin, false, []string{"PARLEY_ADMIN_TOKEN=abc123", "PARLEY_DATA_DIR=" + t.TempDir()}, "serve", "--addr", "127.0.0.1:0")
		if r.code != 2 || !strings.Contains(r.stderr, "PARLEY_ADMIN_TOKEN is 6 characters long: an admin token must have at least 16") {
			t.Fatalf("exit %d:\n%s", r.code, r.stderr)
		}
	})
	t.Run("read-only data directory", func(t *testing.T) {
		// root may write anywhere: run the server as nobody.
		asNobody := os.Geteuid() == 0
		data := filepath.Join(filepath.Dir(bin), "data")
		if err := os.Mkdir(data, 0o555); err != nil {
			t.Fatal(err)
		}
		os.Chmod(data, 0o555)
		r := runBinary(t, bin, asNobody, []string{"PARLEY_DATA_DIR=" + data, "PARLEY_DATABASE_URL="}, "serve", "--addr", "127.0.0.1:0")
		want := "data directory " + data + " is not writable: permission denied"
		if r.code != 1 || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "(14)") {
			t.Fatalf("exit %d, want 1 and %q:\n%s", r.code, want, r.stderr)
		}
		r = runBinary(t, bin, asNobody, []string{"PARLEY_DATA_DIR=" + filepath.Join(data, "sub"), "PARLEY_DATABASE_URL="}, "token", "create", "--email", "a@example.com")
		if r.code != 1 || !strings.Contains(r.stderr, "cannot be created: permission denied") {
			t.Fatalf("token create: exit %d:\n%s", r.code, r.stderr)
		}
	})
}
