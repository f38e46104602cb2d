package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/runtime"
	"github.com/parley-bots/parley/internal/workflow"
	"github.com/parley-bots/parley/internal/workflow/botdir"
)

const botUsage = `usage:
  parley bot init DIR                 scaffold a workflow bot folder
  parley bot deploy [flags] DIR       build the bot JSON and publish it (Admin API)
  parley bot pull [flags] BOT DIR     export a deployed bot JSON into a folder
  parley bot test DIR                 run DIR/tests/*.yaml locally, with no server

deploy and pull flags (or environment):
  --url URL          server URL (PARLEY_URL, default http://localhost:8080)
  --token TOKEN      personal access token (PARLEY_TOKEN)
  --workspace ID     workspace id (PARLEY_WORKSPACE_ID; default: your first workspace)
  --bot ID           bot to publish to (PARLEY_BOT_ID; default: DIR/.parley-bot, else a new bot)
`

func botCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, botUsage)
		return errors.New("missing bot command")
	}
	switch args[0] {
	case "init":
		if len(args) != 2 {
			return errors.New("usage: parley bot init DIR")
		}
		return botInit(args[1], stdout)
	case "test":
		if len(args) != 2 {
			return errors.New("usage: parley bot test DIR")
		}
		return botTest(ctx, args[1], stdout)
	case "deploy", "pull":
		fs := flag.NewFlagSet("parley bot "+args[0], flag.ContinueOnError)
		fs.SetOutput(stderr)
		c := &adminClient{}
		fs.StringVar(&c.url, "url", envOr(getenv, "PARLEY_URL", "http://localhost:8080"), "server URL (PARLEY_URL)")
		fs.StringVar(&c.token, "token", getenv("PARLEY_TOKEN"), "personal access token (PARLEY_TOKEN)")
		fs.StringVar(&c.workspace, "workspace", getenv("PARLEY_WORKSPACE_ID"), "workspace id (PARLEY_WORKSPACE_ID)")
		botID := fs.String("bot", getenv("PARLEY_BOT_ID"), "bot id (PARLEY_BOT_ID)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if c.token == "" {
			return errors.New("a token is required: --token or PARLEY_TOKEN")
		}
		c.url = strings.TrimRight(c.url, "/")
		if args[0] == "deploy" {
			if fs.NArg() != 1 {
				return errors.New("usage: parley bot deploy [flags] DIR")
			}
			return botDeploy(ctx, c, *botID, fs.Arg(0), stdout)
		}
		if fs.NArg() != 2 {
			return errors.New("usage: parley bot pull [flags] BOT DIR")
		}
		return botPull(ctx, c, fs.Arg(0), fs.Arg(1), stdout)
	}
	fmt.Fprint(stderr, botUsage)
	return fmt.Errorf("unknown bot command %q", args[0])
}

func botTest(ctx context.Context, dir string, stdout io.Writer) error {
	raw, err := botdir.Build(dir)
	if err != nil {
		return err
	}
	b, err := workflow.Parse(raw)
	if err != nil {
		return err
	}
	scripts, err := botdir.LoadScripts(dir)
	if err != nil {
		return err
	}
	if len(scripts) == 0 {
		return fmt.Errorf("%s: no scripted conversations in tests/*.yaml", dir)
	}
	engine := runtime.New(runtime.Options{})
	defer engine.Close()
	failed := 0
	for _, s := range scripts {
		if err := botdir.RunLocal(ctx, engine, b, s); err != nil {
			failed++
			fmt.Fprintf(stdout, "FAIL %s: %s\n  %v\n", s.File, s.Name, err)
			continue
		}
		fmt.Fprintf(stdout, "ok   %s: %s\n", s.File, s.Name)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d conversations failed", failed, len(scripts))
	}
	fmt.Fprintf(stdout, "PASS %d conversations\n", len(scripts))
	return nil
}

func botDeploy(ctx context.Context, c *adminClient, botID, dir string, stdout io.Writer) error {
	raw, err := botdir.Build(dir)
	if err != nil {
		return err
	}
	if _, err := workflow.Parse(raw); err != nil {
		return err
	}
	if err := c.ensureWorkspace(ctx); err != nil {
		return err
	}
	idFile := filepath.Join(dir, ".parley-bot")
	if botID == "" {
		if b, err := os.ReadFile(idFile); err == nil {
			botID = strings.TrimSpace(string(b))
		}
	}
	if botID == "" {
		var doc struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(raw, &doc)
		if doc.Name == "" {
			doc.Name = filepath.Base(filepath.Clean(dir))
		}
		var out struct {
			Bot struct {
				ID string `json:"id"`
			} `json:"bot"`
		}
		if err := c.do(ctx, "POST", "/v1/admin/bots", map[string]any{"name": doc.Name}, &out); err != nil {
			return err
		}
		botID = out.Bot.ID
		if err := os.WriteFile(idFile, []byte(botID+"\n"), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created bot %s\n", botID)
	}
	var out struct {
		Version struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"version"`
	}
	if err := c.do(ctx, "POST", "/v1/admin/bots/"+url.PathEscape(botID)+"/publish-from-bot-json", map[string]any{"botJson": json.RawMessage(raw)}, &out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "deployed bot %s version %s (%s)\n", botID, out.Version.Name, out.Version.ID)
	return nil
}

func botPull(ctx context.Context, c *adminClient, botID, dir string, stdout io.Writer) error {
	if err := c.ensureWorkspace(ctx); err != nil {
		return err
	}
	var out struct {
		BotJSON json.RawMessage `json:"botJson"`
	}
	if err := c.do(ctx, "GET", "/v1/admin/bots/"+url.PathEscape(botID)+"/bot-json", nil, &out); err != nil {
		return err
	}
	if err := botdir.Write(dir, out.BotJSON); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ".parley-bot"), []byte(botID+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pulled bot %s into %s\n", botID, dir)
	return nil
}

type adminClient struct {
	url, token, workspace string
}

func (c *adminClient) ensureWorkspace(ctx context.Context) error {
	if c.workspace != "" {
		return nil
	}
	var out struct {
		Workspaces []struct {
			ID string `json:"id"`
		} `json:"workspaces"`
	}
	if err := c.do(ctx, "GET", "/v1/admin/workspaces", nil, &out); err != nil {
		return err
	}
	if len(out.Workspaces) == 0 {
		return errors.New("the token's account has no workspace; pass --workspace")
	}
	c.workspace = out.Workspaces[0].ID
	return nil
}

func (c *adminClient) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if c.workspace != "" {
		req.Header.Set("x-workspace-id", c.workspace)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		var e struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		if json.Unmarshal(data, &e) == nil && e.Message != "" {
			return fmt.Errorf("%s %s: %d %s: %s", method, path, res.StatusCode, e.Type, e.Message)
		}
		return fmt.Errorf("%s %s: %d", method, path, res.StatusCode)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}
