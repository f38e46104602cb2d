package main

import (
	"context"
	"flag"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
		stdout  string
		exit    int
	}{
		{"help", []string{"help"}, nil, "", "parley serve", 0},
		{"version", []string{"version"}, nil, "", "built with " + runtime.Version(), 0},
		{"no command", nil, nil, "missing command", "", 2},
		{"unknown command", []string{"frobnicate"}, nil, `unknown command "frobnicate"` + "\n" + `Run "parley help"`, "", 2},
		{"mistyped command", []string{"srve"}, nil, `unknown command "srve"; did you mean "serve"?` + "\n" + `Run "parley help" for the list of commands.`, "", 2},
		{"mistyped bot command", []string{"bot", "delpoy", "x"}, nil, `unknown command "delpoy"; did you mean "deploy"?`, "", 2},
		{"serve help", []string{"serve", "--help"}, nil, "help requested", "", 0},
		{"bot deploy help", []string{"bot", "deploy", "-h"}, nil, "help requested", "", 0},
		{"bot help", []string{"bot", "help"}, nil, "", "parley bot deploy DIR", 0},
		{"bad addr", []string{"serve", "--addr", "nonsense"}, nil, "--addr", "", 2},
		{"bad database url", []string{"serve", "--database-url", "mysql://x"}, nil, "postgres://", "", 2},
		{"bad log format", []string{"serve", "--log-format", "xml"}, nil, "--log-format", "", 2},
		{"short admin token", []string{"serve"}, map[string]string{"PARLEY_ADMIN_TOKEN": "short-token"}, "PARLEY_ADMIN_TOKEN is 11 characters long: an admin token must have at least 16", "", 2},
		{"token without email", []string{"token", "create"}, nil, "--email", "", 2},
		{"deploy without folder", []string{"bot", "deploy", "--token", "x"}, nil, "takes DIR, got nothing", "", 2},
		{"deploy with two folders", []string{"bot", "deploy", "a", "b"}, nil, `takes DIR, got ["a" "b"]`, "", 2},
		{"deploy without token", []string{"bot", "deploy", "a", "--url", "http://x"}, nil, "a token is required", "", 2},
		{"unknown flag", []string{"bot", "deploy", "a", "--colour"}, nil, "not defined: -colour", "", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut strings.Builder
			err := run(context.Background(), tt.args, func(k string) string { return tt.env[k] }, &out, &errOut)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if !strings.Contains(out.String(), tt.stdout) {
				t.Fatalf("stdout %q lacks %q", out.String(), tt.stdout)
			}
			if got := exitCode(err); got != tt.exit {
				t.Fatalf("exit status %d, want %d", got, tt.exit)
			}
			if strings.HasPrefix(tt.name, "mistyped") && strings.Contains(errOut.String()+out.String(), "Usage:") {
				t.Fatalf("a mistyped command printed the whole help:\n%s", errOut.String())
			}
		})
	}
}

// TestFlagsAnywhere: flags may come before, between or after the
// positional arguments; after "--" everything is positional.
func TestFlagsAnywhere(t *testing.T) {
	for _, args := range [][]string{
		{"--url", "U", "--force", "BOT", "DIR"},
		{"BOT", "DIR", "--url=U", "--force"},
		{"BOT", "--force", "DIR", "--url", "U"},
		{"--force", "--url", "U", "--", "BOT", "DIR"},
	} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		u := fs.String("url", "", "")
		f := fs.Bool("force", false, "")
		pos, err := parseFlags(fs, args)
		if err != nil || *u != "U" || !*f || !slices.Equal(pos, []string{"BOT", "DIR"}) {
			t.Errorf("%q: %v url=%q force=%v pos=%q", args, err, *u, *f, pos)
		}
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("url", "", "")
	if pos, err := parseFlags(fs, []string{"--", "--url", "x"}); err != nil || !slices.Equal(pos, []string{"--url", "x"}) {
		t.Errorf("after --: %v %q", err, pos)
	}
}

// TestDescribeBuild: `parley version` shows the module version, the commit,
// its time, local changes and the Go version from the build information.
func TestDescribeBuild(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "5bfcd55e0c7a4c35a5f6e0b1d2c3e4f5a6b7c8d9"},
		{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}}
	want := "parley v1.4.0\ncommit 5bfcd55e0c7a4c35a5f6e0b1d2c3e4f5a6b7c8d9 (2026-01-02T03:04:05Z), with uncommitted changes\nbuilt with go1.26.8 for " + runtime.GOOS + "/" + runtime.GOARCH
	if got := describeBuild(info, true); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	info = &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}
	if got := describeBuild(info, true); !strings.HasPrefix(got, "parley devel\nbuilt with go1.26.8") {
		t.Fatalf("devel build: %q", got)
	}
	version = "v2.0.0-rc1"
	defer func() { version = "" }()
	if got := describeBuild(nil, false); !strings.HasPrefix(got, "parley v2.0.0-rc1\nbuilt with "+runtime.Version()) {
		t.Fatalf("-X main.version: %q", got)
	}
}

// TestSuggestions: the closest command is suggested, nothing when none is
// close.
func TestSuggestions(t *testing.T) {
	for got, want := range map[string]string{"srve": "serve", "sever": "serve", "SERVE": "serve", "verison": "version",
		"tokn": "token", "bto": "bot", "frobnicate": "", "x": "", "": ""} {
		if s := closest(got, commands); s != want {
			t.Errorf("closest(%q) = %q, want %q", got, s, want)
		}
	}
}

func TestTokenCreate(t *testing.T) {
	dir := t.TempDir()
	var out, errOut strings.Builder
	env := func(k string) string {
		if k == "PARLEY_DATA_DIR" {
			return dir
		}
		return ""
	}
	if err := run(context.Background(), []string{"token", "create", "--email", "Dev@Example.com"}, env, &out, &errOut); err != nil {
		t.Fatalf("token create: %v (%s)", err, errOut.String())
	}
	if tok := strings.TrimSpace(out.String()); !strings.HasPrefix(tok, "bp_pat_") {
		t.Fatalf("token = %q", tok)
	}
	if !strings.Contains(errOut.String(), "dev@example.com") {
		t.Fatalf("stderr %q", errOut.String())
	}
}
