package botdir

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzBuild: any bot.yaml never panics the loader; what it accepts is a
// JSON document; "file:" references never leave the folder.
func FuzzBuild(f *testing.F) {
	for _, s := range []string{"name: x\n", "workflows:\n  main:\n    nodes: []\n", "code: file:code.js\n", "a: file:../../etc/passwd\n",
		"a: file:/etc/passwd\n", "- 1\n- 2\n", "{1: 2, [a]: b}\n", "a: &x [*x]\n", "a: !!binary aGk=\n", ":\n", "a: 1e400\n", "\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if strings.Count(doc, "*") > 8 || strings.Count(doc, "&") > 8 {
			return // alias expansion is yaml.v3's business and can be exponential
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, BotFile), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		_ = os.WriteFile(filepath.Join(dir, "code.js"), []byte("console.log(1)\n"), 0o600)
		out, err := Build(dir)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Build(%q) = %q: not JSON", doc, out)
		}
		if strings.Contains(doc, "passwd") && strings.Contains(string(out), "root:") {
			t.Fatalf("Build(%q) read a file outside the folder", doc)
		}
	})
}
