// Package archtest guards the package dependency direction of
// docs/architecture.md: cmd → app → httpapi → use cases (administration,
// conversations, files, integrations, runtimeapi, tables, turns) → store/realtime/runtime interfaces → model.
package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/parley-bots/parley/"

// useCases are the packages of business rules, one per API family. They
// never import each other: a cross-link (a bot update clears the Chat
// API's caches) is a small interface passed at construction.
var useCases = []string{"internal/administration", "internal/conversations", "internal/files", "internal/integrations", "internal/runtimeapi", "internal/tables", "internal/turns"}

// concreteStores are the engine packages only app (and cmd) may wire.
var concreteStores = []string{"internal/store/sqlstore", "internal/store/sqlite", "internal/store/postgres"}

func without(list []string, pkg string) []string {
	var out []string
	for _, p := range list {
		if p != pkg {
			out = append(out, p)
		}
	}
	return out
}

func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

type rule struct {
	pkg    string
	denied []string
	reason string
}

// forbidden lists, per package prefix, project packages it must not depend
// on (directly or not).
var forbidden = func() []rule {
	rules := []rule{
		{"internal/model", []string{"internal/"}, "the domain package imports only the standard library"},
		{"internal/wire", join([]string{"internal/store", "internal/httpapi", "internal/realtime", "internal/runtime", "internal/app", "internal/auth"}, useCases), "JSON shapes depend on the domain only"},
		{"internal/store", join([]string{"internal/httpapi", "internal/realtime", "internal/runtime", "internal/app", "internal/auth", "internal/wire"}, useCases), "stores are dumb and below the use cases"},
		{"internal/runtime", join([]string{"internal/store", "internal/httpapi", "internal/app", "internal/realtime"}, useCases), "the runtime talks to the world only through its Host interface"},
		{"internal/realtime", join([]string{"internal/httpapi", "internal/app", "internal/runtime"}, useCases, concreteStores), "the hub knows signals, not use cases"},
		{"internal/auth", join([]string{"internal/store", "internal/httpapi", "internal/app"}, useCases), "credentials are pure functions"},
		{"internal/botproc", []string{"internal/"}, "the bot process supervisor is infrastructure: standard library only"},
		{"internal/llm", []string{"internal/"}, "the model endpoints' client is infrastructure: standard library only"},
		{"internal/gctune", []string{"internal/"}, "the collector's tuning is process-wide infrastructure: standard library only"},
		{"internal/httpapi", join([]string{"internal/app", "internal/turns"}, concreteStores), "handlers go through the use cases"},
		{"internal/metrics", join([]string{"internal/app", "internal/store", "internal/realtime", "internal/runtime"}, useCases), "metrics observe through wrappers and the interfaces app hands them"},
	}
	for _, uc := range useCases {
		rules = append(rules, rule{uc, join([]string{"internal/httpapi", "internal/app"}, concreteStores, without(useCases, uc)),
			"business rules see store interfaces only, never HTTP, and other use-case packages only through interfaces"})
	}
	return rules
}()

func TestDependencyDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], mod)
		if strings.Contains(pkg, "testutil") {
			continue
		}
		for _, rule := range forbidden {
			if pkg != rule.pkg && !strings.HasPrefix(pkg, rule.pkg+"/") {
				continue
			}
			checked++
			for _, dep := range fields[1:] {
				d, ok := strings.CutPrefix(dep, mod)
				if !ok || d == pkg || strings.HasPrefix(d, rule.pkg+"/") || d == rule.pkg {
					continue
				}
				for _, deny := range rule.denied {
					if d == deny || strings.HasPrefix(d, strings.TrimSuffix(deny, "/")+"/") || (strings.HasSuffix(deny, "/") && strings.HasPrefix(d, deny)) {
						t.Errorf("%s depends on %s: %s", pkg, d, rule.reason)
					}
				}
			}
		}
	}
	if checked < 11 {
		t.Fatalf("only %d packages checked; the rules no longer match the layout", checked)
	}
}
