package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

	"github.com/parley-bots/parley/internal/testutil/syncbuf"
	"github.com/parley-bots/parley/internal/testutil/testapp"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// process is a `parley serve` child process.
type process struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncbuf.Buffer
	exited chan struct{} // closed when the process has exited
	err    error         // its exit status, once exited is closed
}

// built is the parley binary the process tests share: built once per
// test run (linking takes seconds), removed by TestMain.
var built struct {
	sync.Mutex
	dir, bin string
}

func buildBinary(t *testing.T) string {
	t.Helper()
	built.Lock()
	defer built.Unlock()
	if built.bin != "" {
		return built.bin
	}
	dir, err := os.MkdirTemp("", "parley-bin-")
	if err != nil {
		t.Fatal(err)
	}
	built.dir = dir
	bin := filepath.Join(dir, "parley")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	built.bin = bin
	return bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// startProcess runs `parley serve` and waits until it logs its address.
func startProcess(t *testing.T, bin string, env ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	p := &process{cmd: cmd, stderr: &syncbuf.Buffer{}, exited: make(chan struct{})}
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

func chatPost(t *testing.T, url, key string, body any, out any) {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("x-user-key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer res.Body.Close()
	if res.StatusCode != 201 {
		t.Fatalf("POST %s: %d", url, res.StatusCode)
	}
	if out != nil {
		json.NewDecoder(res.Body).Decode(out)
	}
}

// TestCrashLosesNoTurn kills a `parley serve` process (SIGKILL) while turns
// are queued, starts it again on the same data, and checks that every
// message gets its reply, in order, and that at most the turn in flight in
// each conversation ran twice.
func TestCrashLosesNoTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	const token = "crash-admin-token"
	env := []string{"PARLEY_ADMIN_TOKEN=" + token, "PARLEY_DATA_DIR=" + t.TempDir()}
	p := startProcess(t, bin, env...)
	wsID := adminJSON(t, "GET", p.url+"/v1/admin/workspaces", token, "", "")["workspaces"].([]any)[0].(map[string]any)["id"].(string)
	// Each turn works ~20 ms, so most of the turns are still queued when the
	// process is killed.
	code := `bot.on.message('text', async ({ message, client }) => {
  const until = Date.now() + 20
  while (Date.now() < until) {}
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: 'ack: ' + message.payload.text } })
})`
	body, _ := json.Marshal(map[string]any{"name": "ack", "code": code})
	bot := adminJSON(t, "POST", p.url+"/v1/admin/bots", token, wsID, string(body))["bot"].(map[string]any)
	botID := bot["id"].(string)
	path := "/chat/" + bot["integrations"].(map[string]any)["chat"].(map[string]any)["webhookId"].(string)

	const convs, perConv = 10, 20
	type conv struct{ id, key string }
	cs := make([]conv, convs)
	for i := range cs {
		var u struct{ Key string }
		chatPost(t, p.url+path+"/users", "", map[string]any{}, &u)
		var c struct{ Conversation struct{ ID string } }
		chatPost(t, p.url+path+"/conversations", u.Key, map[string]any{}, &c)
		cs[i] = conv{c.Conversation.ID, u.Key}
	}
	for n := range perConv {
		for _, c := range cs {
			chatPost(t, p.url+path+"/messages", c.key, map[string]any{"conversationId": c.id,
				"payload": map[string]any{"type": "text", "text": fmt.Sprint(n)}}, nil)
		}
	}
	p.cmd.Process.Kill() // no graceful shutdown
	<-p.exited

	q := startProcess(t, bin, env...)
	deadline := time.Now().Add(60 * time.Second)
	duplicates := 0
	for _, c := range cs {
		var texts []string
		for {
			texts = botTexts(t, q.url, token, wsID, botID, c.id)
			if len(dedupe(texts)) >= perConv || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		unique := dedupe(texts)
		duplicates += len(texts) - len(unique)
		if len(texts)-len(unique) > 1 {
			t.Fatalf("conversation %s: more than the turn in flight ran twice: %v", c.id, texts)
		}
		for n, got := range unique {
			if want := fmt.Sprintf("ack: %d", n); got != want || len(unique) != perConv {
				t.Fatalf("conversation %s: replies %v", c.id, texts)
			}
		}
	}
	t.Logf("%d messages answered in order after a crash; %d in-flight turns ran twice", convs*perConv, duplicates)
	q.stop(t)
}

// botTexts lists the bot's replies in a conversation, oldest first, through
// the dashboard's conversation transcript endpoint.
func botTexts(t *testing.T, base, token, ws, botID, convID string) []string {
	t.Helper()
	var texts []string
	next := ""
	for {
		u := base + "/v1/admin/bots/" + botID + "/conversations/" + convID + "/messages"
		if next != "" {
			u += "?nextToken=" + next
		}
		page := adminJSON(t, "GET", u, token, ws, "")
		for _, m := range page["messages"].([]any) {
			msg := m.(map[string]any)
			if msg["userId"] == botID {
				texts = append(texts, msg["payload"].(map[string]any)["text"].(string))
			}
		}
		meta, _ := page["meta"].(map[string]any)
		if n, _ := meta["nextToken"].(string); n != "" {
			next = n
			continue
		}
		break
	}
	// The endpoint lists newest first.
	for i, j := 0, len(texts)-1; i < j; i, j = i+1, j-1 {
		texts[i], texts[j] = texts[j], texts[i]
	}
	return texts
}

func dedupe(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
