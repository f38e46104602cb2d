package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/testutil/testapp"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// process is a `parley serve` child process.
type process struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
	exited chan struct{} // closed when the process has exited
	err    error         // its exit status, once exited is closed
}

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "parley")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startProcess runs `parley serve` and waits until it logs its address.
func startProcess(t *testing.T, bin string, env ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	p := &process{cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = io.MultiWriter(pw, p.stderr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); pw.Close(); close(p.exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.exited
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == "parley is serving" {
				found <- line["public_url"].(string)
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case p.url = <-found:
	case <-p.exited:
		t.Fatalf("parley exited: %v\n%s", p.err, p.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("parley did not start:\n%s", p.stderr)
	}
	return p
}

func (p *process) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		if p.err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", p.err, p.stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no exit after SIGTERM:\n%s", p.stderr)
	}
	if !strings.Contains(p.stderr.String(), "stopped cleanly") {
		t.Fatalf("no clean stop logged:\n%s", p.stderr)
	}
}

func adminJSON(t *testing.T, method, url, token, ws, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if ws != "" {
		req.Header.Set("x-workspace-id", ws)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode != 200 {
		t.Fatalf("%s %s: %d %v", method, url, res.StatusCode, out)
	}
	return out
}

// TestTwoServeProcessesOnPostgres runs two real `parley serve` processes on
// one PostgreSQL database: both start together (migrations under the
// advisory lock, a single bootstrap), serve the same bot, and the chat
// compatibility suite's cross-node scenarios (a signal published through
// one reaches listeners on the other, replay across them) pass. SIGTERM
// stops both cleanly.
func TestTwoServeProcessesOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	url := testdb.PostgresURL(t)
	const token = "two-process-admin-token"
	env := []string{"PARLEY_DATABASE_URL=" + url, "PARLEY_ADMIN_TOKEN=" + token, "PARLEY_DATA_DIR=" + t.TempDir()}
	ch := make(chan *process, 2)
	for range 2 {
		go func() { ch <- startProcess(t, bin, env...) }()
	}
	a, b := <-ch, <-ch

	ws := adminJSON(t, "GET", a.url+"/v1/admin/workspaces", token, "", "")["workspaces"].([]any)
	if len(ws) != 1 {
		t.Fatalf("two processes starting together bootstrapped %d workspaces", len(ws))
	}
	wsID := ws[0].(map[string]any)["id"].(string)
	code, _ := os.ReadFile(filepath.Join(testapp.CompatDir(), "bots", "echo.js"))
	body, _ := json.Marshal(map[string]any{"name": "echo", "code": string(code)})
	bot := adminJSON(t, "POST", b.url+"/v1/admin/bots", token, wsID, string(body))["bot"].(map[string]any)
	chatIn := bot["integrations"].(map[string]any)["chat"].(map[string]any)
	webhook := chatIn["webhookId"].(string)
	key := chatIn["configuration"].(map[string]any)["encryptionKey"].(string)

	out := testapp.RunNode(t, "chat.mjs", map[string]string{
		"API_URL": a.url + "/chat/" + webhook, "API_URL_2": b.url + "/chat/" + webhook, "ENCRYPTION_KEY": key})
	t.Log(out[max(0, len(out)-200):])
	a.stop(t)
	b.stop(t)
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
