// Package slack holds Parley's Slack integration (JavaScript, built with
// @botpress/sdk); this Go test runs its Node.js tests with the Go suite, so
// CI cannot pass without them.
package slack

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// TestSlackIntegrationBundle builds the integration's bundle and runs
// test/slack.test.mjs: every operation called with the SDK's headers
// through Parley's runner, against a Slack Web API and a Runtime API on
// loopback, with signed, unsigned, forged and stale Slack requests. node
// and tests/compat's packages are required (as for every compatibility
// test).
func TestSlackIntegrationBundle(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required: %v", err)
	}
	if _, err := os.Stat(filepath.Join(testapp.CompatDir(), "node_modules", "@botpress", "sdk")); err != nil {
		t.Fatalf("@botpress/sdk missing: run `npm ci` in tests/compat (the bundle is built with its packages): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "test/")
	cmd.Dir = "."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	t.Logf("%s", out[max(0, len(out)-300):])
}
