package main

import (
	"context"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	noenv := func(string) string { return "" }
	tests := []struct {
		name    string
		args    []string
		wantErr string
		stdout  string
	}{
		{"help", []string{"help"}, "", "parley serve"},
		{"version", []string{"version"}, "", "parley dev"},
		{"no command", nil, "missing command", ""},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`, ""},
		{"bad addr", []string{"serve", "--addr", "nonsense"}, "--addr", ""},
		{"bad database url", []string{"serve", "--database-url", "mysql://x"}, "postgres://", ""},
		{"bad log format", []string{"serve", "--log-format", "xml"}, "--log-format", ""},
		{"token without email", []string{"token", "create"}, "--email", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut strings.Builder
			err := run(context.Background(), tt.args, noenv, &out, &errOut)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if !strings.Contains(out.String(), tt.stdout) {
				t.Fatalf("stdout %q lacks %q", out.String(), tt.stdout)
			}
		})
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
