// Package archtest guards the package dependency direction of DESIGN.md:
// cmd → app → httpapi → service → store/realtime/runtime interfaces → model.
package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/parley-bots/parley/"

// forbidden lists, per package prefix, project packages it must not depend
// on (directly or not).
var forbidden = []struct {
	pkg    string
	denied []string
	reason string
}{
	{"internal/model", []string{"internal/"}, "the domain package imports only the standard library"},
	{"internal/store", []string{"internal/service", "internal/httpapi", "internal/realtime", "internal/runtime", "internal/app", "internal/auth"}, "stores are dumb and below the service"},
	{"internal/runtime", []string{"internal/store", "internal/service", "internal/httpapi", "internal/app", "internal/realtime"}, "the runtime talks to the world only through its Host interface"},
	{"internal/realtime", []string{"internal/service", "internal/httpapi", "internal/app", "internal/store/sqlstore", "internal/store/sqlite", "internal/runtime"}, "the hub knows signals, not use cases"},
	{"internal/auth", []string{"internal/store", "internal/service", "internal/httpapi", "internal/app"}, "credentials are pure functions"},
	{"internal/service", []string{"internal/httpapi", "internal/app", "internal/store/sqlstore", "internal/store/sqlite", "internal/store/postgres"}, "business rules see store interfaces only, never HTTP"},
	{"internal/httpapi", []string{"internal/app", "internal/store/sqlstore", "internal/store/sqlite", "internal/store/postgres"}, "handlers go through the service"},
}

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
	if checked < 5 {
		t.Fatalf("only %d packages checked; the rules no longer match the layout", checked)
	}
}
