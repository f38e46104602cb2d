package app_test

import (
	"io"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
)

// TestConfigOverloadAndSync checks the flags and environment variables of
// the turn queue's bound and SQLite's durability.
func TestConfigOverloadAndSync(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		env   map[string]string
		delay time.Duration
		sync  string
		bad   bool
	}{
		{name: "defaults"},
		{name: "flags", args: []string{"--max-turn-delay", "50ms", "--sync", "full"}, delay: 50 * time.Millisecond, sync: "full"},
		{name: "environment", env: map[string]string{"PARLEY_MAX_TURN_DELAY": "-1ns", "PARLEY_SYNC": "normal"}, delay: -1, sync: "normal"},
		{name: "flag over environment", args: []string{"--sync", "normal"}, env: map[string]string{"PARLEY_SYNC": "full"}, sync: "normal"},
		{name: "unknown sync mode", args: []string{"--sync", "off"}, bad: true},
		{name: "unknown sync mode in environment", env: map[string]string{"PARLEY_SYNC": "fast"}, bad: true},
		{name: "bad delay", args: []string{"--max-turn-delay", "soon"}, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := app.LoadConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if tc.bad {
				if err == nil {
					t.Fatal("accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.MaxTurnDelay != tc.delay || cfg.Sync != tc.sync {
				t.Fatalf("MaxTurnDelay %v, Sync %q; want %v, %q", cfg.MaxTurnDelay, cfg.Sync, tc.delay, tc.sync)
			}
		})
	}
}
