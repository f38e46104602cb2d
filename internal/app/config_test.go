package app_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
)

// TestModelEndpointsConfig: the optional model endpoints come from flags
// or the environment, their keys only from the environment, and a URL
// that is not http(s) stops serve.
func TestModelEndpointsConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		want    app.Config
		wantErr string
	}{
		{name: "none by default"},
		{name: "flags", args: []string{"--embeddings-url", "http://127.0.0.1:11434/v1/embeddings", "--embeddings-model", "nomic-embed-text",
			"--answer-url", "https://api.example.com/v1/chat/completions", "--answer-model", "small"},
			env: map[string]string{"PARLEY_EMBEDDINGS_API_KEY": "k1", "PARLEY_ANSWER_API_KEY": "k2"},
			want: app.Config{EmbeddingsURL: "http://127.0.0.1:11434/v1/embeddings", EmbeddingsModel: "nomic-embed-text", EmbeddingsKey: "k1",
				AnswerURL: "https://api.example.com/v1/chat/completions", AnswerModel: "small", AnswerKey: "k2"}},
		{name: "environment", env: map[string]string{"PARLEY_EMBEDDINGS_URL": "http://h/v1/embeddings", "PARLEY_EMBEDDINGS_MODEL": "m",
			"PARLEY_ANSWER_URL": "http://h/v1/chat/completions", "PARLEY_ANSWER_MODEL": "a"},
			want: app.Config{EmbeddingsURL: "http://h/v1/embeddings", EmbeddingsModel: "m", AnswerURL: "http://h/v1/chat/completions", AnswerModel: "a"}},
		{name: "not a URL", args: []string{"--embeddings-url", "localhost:11434"}, wantErr: "--embeddings-url"},
		{name: "not http", args: []string{"--answer-url", "ftp://h/v1/chat/completions"}, wantErr: "--answer-url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := app.LoadConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := app.Config{EmbeddingsURL: c.EmbeddingsURL, EmbeddingsModel: c.EmbeddingsModel, EmbeddingsKey: c.EmbeddingsKey,
				AnswerURL: c.AnswerURL, AnswerModel: c.AnswerModel, AnswerKey: c.AnswerKey}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestConfigOverloadAndSync checks the flags and environment variables of
// the turn queue's bound, the turn workers and SQLite's durability.
func TestConfigOverloadAndSync(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		delay   time.Duration
		sync    string
		workers int
		bad     bool
	}{
		{name: "defaults"},
		{name: "turn workers", args: []string{"--turn-workers", "48"}, workers: 48},
		{name: "turn workers in environment", env: map[string]string{"PARLEY_TURN_WORKERS": "64"}, workers: 64},
		{name: "negative turn workers", args: []string{"--turn-workers", "-2"}, bad: true},
		{name: "flags", args: []string{"--max-turn-delay", "50ms", "--sync", "full"}, delay: 50 * time.Millisecond, sync: "full"},
		{name: "environment", env: map[string]string{"PARLEY_MAX_TURN_DELAY": "-1ns", "PARLEY_SYNC": "normal"}, delay: -1, sync: "normal"},
		{name: "flag over environment", args: []string{"--sync", "normal"}, env: map[string]string{"PARLEY_SYNC": "full"}, sync: "normal"},
		{name: "unknown sync mode", args: []string{"--sync", "off"}, bad: true},
		{name: "unknown sync mode in environment", env: map[string]string{"PARLEY_SYNC": "fast"}, bad: true},
		{name: "bad delay", args: []string{"--max-turn-delay", "soon"}, bad: true},
		{name: "automatic delay", args: []string{"--max-turn-delay", "auto"}, env: map[string]string{"PARLEY_MAX_TURN_DELAY": "2s"}},
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
			if cfg.MaxTurnDelay != tc.delay || cfg.Sync != tc.sync || cfg.TurnWorkers != tc.workers {
				t.Fatalf("MaxTurnDelay %v, Sync %q, TurnWorkers %d; want %v, %q, %d", cfg.MaxTurnDelay, cfg.Sync, cfg.TurnWorkers, tc.delay, tc.sync, tc.workers)
			}
		})
	}
}

// TestConfigIntSettings checks integer settings given by flag or
// environment: --gc-headroom-mb (PARLEY_GC_HEADROOM_MB) and
// --db-warm-connections (PARLEY_DB_WARM_CONNECTIONS).
func TestConfigIntSettings(t *testing.T) {
	headroom := func(c app.Config) int { return c.GCHeadroomMB }
	warm := func(c app.Config) int { return c.DBWarmConnections }
	for _, tc := range []struct {
		name string
		get  func(app.Config) int
		args []string
		env  map[string]string
		want int
		bad  bool
	}{
		{name: "headroom: default", get: headroom, want: app.DefaultGCHeadroomMB},
		{name: "headroom: flag", get: headroom, args: []string{"--gc-headroom-mb", "128"}, want: 128},
		{name: "headroom: environment", get: headroom, env: map[string]string{"PARLEY_GC_HEADROOM_MB": "0"}, want: 0},
		{name: "headroom: flag over environment", get: headroom, args: []string{"--gc-headroom-mb", "32"}, env: map[string]string{"PARLEY_GC_HEADROOM_MB": "0"}, want: 32},
		{name: "headroom: negative", get: headroom, args: []string{"--gc-headroom-mb", "-1"}, bad: true},
		{name: "headroom: not a number", get: headroom, env: map[string]string{"PARLEY_GC_HEADROOM_MB": "64MB"}, bad: true},
		{name: "warm connections: default, the whole pool", get: warm, want: -1},
		{name: "warm connections: flag", get: warm, args: []string{"--db-warm-connections", "8"}, want: 8},
		{name: "warm connections: environment, none", get: warm, env: map[string]string{"PARLEY_DB_WARM_CONNECTIONS": "0"}, want: 0},
		{name: "warm connections: below -1", get: warm, args: []string{"--db-warm-connections", "-2"}, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := app.LoadConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if tc.bad {
				if err == nil {
					t.Fatalf("accepted: %d", tc.get(cfg))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.get(cfg); got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
}
