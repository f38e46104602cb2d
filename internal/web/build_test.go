package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

func webDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "web")
}

// sources are the files and folders of web/ that a build reads; the same
// list as `roots` in web/scripts/stamp.mjs.
var sources = []string{"package.json", "package-lock.json", "tsconfig.json", "tsconfig.node.json", "eslint.config.js", "vite.config.ts", "vite.embed.config.ts", "index.html", "chat.html", "scripts", "src", "public"}

// sourceHash is web/scripts/stamp.mjs's hash of the front-end sources.
func sourceHash(t *testing.T, root string) string {
	t.Helper()
	var files []string
	for _, r := range sources {
		err := filepath.WalkDir(filepath.Join(root, r), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(f + "\x00"))
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestEmbeddedBuildIsCurrent checks that web/dist (embedded in the binary)
// was built from the sources in web/: edit a source without rebuilding and
// this fails. Rebuild with `cd web && npm ci && npm run build`.
func TestEmbeddedBuildIsCurrent(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(webDir(), "dist", "build-info.json"))
	if err != nil {
		t.Fatalf("web/dist/build-info.json: %v (run `npm ci && npm run build` in web/)", err)
	}
	var info struct {
		SourceHash string `json:"sourceHash"`
	}
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	if got := sourceHash(t, webDir()); got != info.SourceHash {
		t.Fatalf("web/dist is stale: the sources hash to %s but dist was built from %s; run `npm ci && npm run build` in web/ and commit web/dist", got, info.SourceHash)
	}
}

// TestEmbeddedBuildReproduces rebuilds the front-end from a clean copy of
// its sources (npm install from the lock file, then vite build; npm ci
// refuses this lock file, which lists no other platforms' optional
// packages) and compares every file with web/dist.
// It needs npm and the registry, so it runs in CI (CI set) or when
// PARLEY_TEST_WEB_REBUILD=1.
func TestEmbeddedBuildReproduces(t *testing.T) {
	if os.Getenv("CI") == "" && os.Getenv("PARLEY_TEST_WEB_REBUILD") == "" {
		t.Skip("set PARLEY_TEST_WEB_REBUILD=1 to rebuild the front-end and compare it with web/dist (CI does)")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	tmp := t.TempDir()
	src := webDir()
	for _, name := range sources {
		if err := os.CopyFS(filepath.Join(tmp, name), os.DirFS(filepath.Join(src, name))); err != nil {
			// os.CopyFS copies directories; files are copied by hand.
			data, rerr := os.ReadFile(filepath.Join(src, name))
			if rerr != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, args := range [][]string{{"install", "--no-audit", "--no-fund", "--loglevel=error"}, {"run", "build"}} {
		cmd := exec.Command("npm", args...)
		cmd.Dir = tmp
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	want, got := tree(t, filepath.Join(src, "dist")), tree(t, filepath.Join(tmp, "dist"))
	for name, w := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("web/dist/%s is not produced by a build of the sources", name)
		} else if !bytes.Equal(g, w) {
			t.Errorf("web/dist/%s differs from a fresh build", name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("a fresh build produces %s, missing from web/dist", name)
		}
	}
	if t.Failed() {
		t.Log("rebuild with `cd web && npm ci && npm run build` and commit web/dist")
	}
}

func tree(t *testing.T, root string) map[string][]byte {
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
