package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// defaultBotkit is where -botkit looks when not given: the Node project of
// Botkit's echo bot (bench/botkit, from the repository's root), used once
// `npm ci` installed its node_modules.
const defaultBotkit = "bench/botkit"

// botkitDir resolves -botkit: the directory of the Botkit echo bot to run,
// or "" with a one-line note saying why it is left out. dir is the flag's
// value and given whether it was on the command line: a directory given
// that cannot run is an error; the default that cannot is skipped.
func botkitDir(dir string, given bool) (string, string, error) {
	if dir == "" {
		return "", "", nil
	}
	why := ""
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		why = fmt.Sprintf("no %s (cd %s && npm ci)", filepath.Join(dir, "node_modules"), dir)
	} else if _, err := exec.LookPath("node"); err != nil {
		why = "no node on PATH"
	}
	switch {
	case why == "":
		return dir, "", nil
	case given:
		return "", "", fmt.Errorf("-botkit %s: %s", dir, why)
	}
	return "", "botkit: left out, " + why, nil
}

// startBotkit starts Botkit's echo bot on its web adapter (`node echo.js
// PORT` in dir, on 127.0.0.1) and waits until it echoes a message.
func startBotkit(dir string) (*target, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command("node", "echo.js", port)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	t := &target{name: "botkit", url: "http://" + addr, cmd: cmd}
	if err := t.start("/"); err != nil { // any answer, even 404: it listens
		return nil, err
	}
	if st := sendBotkit(t.url, 0, -1); st/100 != 2 {
		t.stop()
		return nil, fmt.Errorf("botkit on %s did not echo (status %d)", t.url, st)
	}
	return t, nil
}

// sendBotkit posts user u's n-th message to the web adapter, which
// answers synchronously with the bot's replies ([{"type":"message",
// "text":...}]). It returns the status, -1 for a 2xx without the echo.
// The adapter makes every POST a "webhook" turn (replies in the response)
// whatever the body's "channel" says.
func sendBotkit(base string, u, n int) int {
	text := "hi " + strconv.Itoa(u) + "-" + strconv.Itoa(n)
	body := `{"type":"message","text":"` + text + `","user":"u` + strconv.Itoa(u) + `","channel":"webhook"}`
	st, ok, err := post(base+"/api/messages", nil, body, func(raw []byte) bool { return echoed(raw, text) })
	if err != nil {
		return 0
	}
	if st/100 == 2 && !ok {
		return -1
	}
	return st
}

// echoed reports whether a web adapter's answer holds a message with text.
func echoed(raw []byte, text string) bool {
	if !bytes.Contains(raw, []byte(text)) {
		return false
	}
	var msgs []struct{ Type, Text string }
	if json.Unmarshal(raw, &msgs) != nil {
		return false
	}
	for _, m := range msgs {
		if m.Type == "message" && m.Text == text {
			return true
		}
	}
	return false
}

// botkitVersions names the Botkit, web adapter and Node.js versions in
// dir's node_modules, for the table's note.
func botkitVersions(dir string) string {
	version := func(pkg string) string {
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, "package.json"))
		var p struct{ Version string }
		if err != nil || json.Unmarshal(b, &p) != nil {
			return "?"
		}
		return p.Version
	}
	node := "?"
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		node = strings.TrimSpace(string(out))
	} else if errors.Is(err, exec.ErrNotFound) {
		node = "none"
	}
	return fmt.Sprintf("botkit %s, botbuilder-adapter-web %s, botbuilder %s, Node.js %s",
		version("botkit"), version("botbuilder-adapter-web"), version("botbuilder"), node)
}
