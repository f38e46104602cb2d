package botproc

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

const echoBundle = `"use strict";
module.exports = { handler: async (req) => ({ status: 200, body: JSON.stringify({ env: process.env.BP_BOT_ID + " " + process.env.BP_API_URL, op: req.headers["x-bp-operation"], secret: process.env.PARLEY_SECRET || "" }) }) }`

func call(t *testing.T, url string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader("{}"))
	req.Header.Set("x-bp-operation", "ping")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// TestSupervisor runs a real Node.js process: it serves the bundle's
// handler on loopback with the bot's environment (not Parley's), is
// restarted after SIGKILL, and stopped when retired.
func TestSupervisor(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is required: %v", err)
	}
	t.Setenv("PARLEY_SECRET", "do-not-leak")
	s := New(Options{Dir: t.TempDir(), APIURL: "http://parley.test",
		Token: func(context.Context, string) (string, error) { return "tok", nil }})
	defer s.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	url, err := s.URL(ctx, "bot1", "v1", echoBundle)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("url = %s", url)
	}
	if got := call(t, url); got != `{"env":"bot1 http://parley.test","op":"ping","secret":""}` {
		t.Fatalf("answer = %s", got)
	}
	pid := s.PID("bot1")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for s.PID("bot1") == pid || s.PID("bot1") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("not restarted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	url, err = s.URL(ctx, "bot1", "v1", echoBundle)
	if err != nil {
		t.Fatal(err)
	}
	call(t, url)

	// A new version replaces the old process.
	newPID := s.PID("bot1")
	if _, err := s.URL(ctx, "bot1", "v2", echoBundle); err != nil {
		t.Fatal(err)
	}
	s.Retire("bot1", "v2")
	if err := syscall.Kill(newPID, 0); err == nil {
		time.Sleep(500 * time.Millisecond)
		if err := syscall.Kill(newPID, 0); err == nil {
			t.Fatalf("old version's process %d still runs", newPID)
		}
	}
	s.Retire("bot1", "")
	if s.PID("bot1") != 0 {
		t.Fatal("retired bot still has a process")
	}
}

func TestNoNode(t *testing.T) {
	s := New(Options{Node: "parley-no-such-node", Dir: t.TempDir()})
	if s.Available() == nil {
		t.Fatal("Available() = nil without node")
	}
	if _, err := s.URL(context.Background(), "b", "v", echoBundle); err == nil {
		t.Fatal("URL without node succeeded")
	}
}
