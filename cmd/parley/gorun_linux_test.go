package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childOf finds the process whose parent is ppid.
func childOf(ppid int) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(ppid) {
			return pid
		}
	}
	return 0
}

// alive reports whether a process runs (a zombie has exited).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// TestGoRunSIGTERMStopsServer: `go run ./cmd/parley serve` exits on SIGTERM
// without passing it on; the server must stop with it, not stay orphaned.
func TestGoRunSIGTERMStopsServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go run")
	}
	cmd := exec.Command("go", "run", ".", "serve", "--addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = append(os.Environ(), "PARLEY_DATA_DIR="+t.TempDir(), "PARLEY_DATABASE_URL=", "PARLEY_ADMIN_TOKEN=")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var server int
	t.Cleanup(func() {
		cmd.Process.Kill()
		if server != 0 && alive(server) {
			syscall.Kill(server, syscall.SIGKILL)
		}
	})
	serving := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == "parley is serving" {
				close(serving)
				break
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case <-serving:
	case <-time.After(3 * time.Minute):
		t.Fatal("go run: the server did not start")
	}
	if server = childOf(cmd.Process.Pid); server == 0 {
		t.Fatal("no server process under go run")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for alive(server) {
		if time.Now().After(deadline) {
			t.Fatalf("the server (pid %d) still runs 20 s after go run got SIGTERM", server)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
