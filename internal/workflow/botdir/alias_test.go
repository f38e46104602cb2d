package botdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bot.yaml with a recursive alias, or aliases that expand exponentially
// (the "billion laughs"), is refused with an error instead of exhausting
// the stack or the memory.
func TestBuildRefusesAliasBombs(t *testing.T) {
	laughs := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for i, name := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		laughs += name + ": &" + name + " [" + strings.Repeat("*"+prev+", ", 9) + "*" + prev + "]\n"
		prev = name
		_ = i
	}
	for name, doc := range map[string]string{
		"recursive sequence": "a: &x [*x]\n",
		"recursive mapping":  "a: &x {b: *x}\n",
		"billion laughs":     laughs,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, BotFile), []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := Build(dir); err == nil {
				t.Fatalf("Build accepted %q", doc)
			}
		})
	}
}
