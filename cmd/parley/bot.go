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
	"reflect"
	"strings"
	"syscall"
	"time"

	"github.com/parley-bots/parley/internal/runtime"
	"github.com/parley-bots/parley/internal/workflow"
	"github.com/parley-bots/parley/internal/workflow/botdir"
)

// defaultServerURL is where `parley serve` listens by default.
const defaultServerURL = "http://127.0.0.1:3000"

const botUsage = `usage:
  parley bot init DIR                 scaffold a workflow bot folder
  parley bot test DIR                 run DIR/tests/*.yaml locally, with no server
  parley bot deploy DIR [flags]       build the bot and publish it (Admin API)
  parley bot pull BOT DIR [flags]     export a deployed bot into a folder

Flags may come before or after the arguments.

deploy and pull flags (or environment):
  --url URL          server URL (PARLEY_URL, default ` + defaultServerURL + `)
  --token TOKEN      personal access token (PARLEY_TOKEN)
  --workspace ID     workspace id (PARLEY_WORKSPACE_ID; default: your first workspace)
deploy:
  --bot ID           bot to publish to (PARLEY_BOT_ID; default: the bot this folder
                     was last deployed to or pulled from, else a new bot)
pull:
  --force            overwrite files of DIR that differ from the pulled bot

deploy prints "unchanged" and publishes nothing when the deployed version
already matches the folder. Which bot a folder goes to is remembered in
the user configuration directory (PARLEY_CONFIG_DIR, default
` + "`<user config dir>/parley`" + `), never inside the folder. pull writes into a
new or empty folder; into a bot folder it merges (bot.yaml keeps its
comments and file names, tests/ and other files are left alone) and
refuses to overwrite a changed file without --force. A code bot is pulled
as bot.js plus a bot.yaml naming it.
`

var botCommands = []string{"init", "test", "deploy", "pull", "help"}

func botCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, botUsage)
		return usageErrorf("missing bot command")
	}
	sub := args[0]
	switch sub {
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, botUsage)
		return nil
	case "init", "test", "deploy", "pull":
	default:
		return unknownCommand("parley bot", sub, botCommands, `Run "parley bot help" for usage.`)
	}
	fs := flag.NewFlagSet("parley bot "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), botUsage) }
	c := &adminClient{}
	var botID *string
	var force *bool
	if sub == "deploy" || sub == "pull" {
		fs.StringVar(&c.url, "url", envOr(getenv, "PARLEY_URL", defaultServerURL), "server URL (PARLEY_URL)")
		fs.StringVar(&c.token, "token", getenv("PARLEY_TOKEN"), "personal access token (PARLEY_TOKEN)")
		fs.StringVar(&c.workspace, "workspace", getenv("PARLEY_WORKSPACE_ID"), "workspace id (PARLEY_WORKSPACE_ID)")
	}
	if sub == "deploy" {
		botID = fs.String("bot", getenv("PARLEY_BOT_ID"), "bot id (PARLEY_BOT_ID)")
	}
	if sub == "pull" {
		force = fs.Bool("force", false, "overwrite files that differ from the pulled bot")
	}
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	want := map[string][]string{"init": {"DIR"}, "test": {"DIR"}, "deploy": {"DIR"}, "pull": {"BOT", "DIR"}}[sub]
	if len(pos) != len(want) {
		got := "nothing"
		if len(pos) > 0 {
			got = fmt.Sprintf("%q", pos)
		}
		return usageErrorf("parley bot %s takes %s, got %s\nusage: parley bot %s %s [flags]; run \"parley bot help\" for more",
			sub, strings.Join(want, " and "), got, sub, strings.Join(want, " "))
	}
	switch sub {
	case "init":
		return botInit(pos[0], stdout)
	case "test":
		return botTest(ctx, pos[0], stdout)
	}
	if c.token == "" {
		return usageErrorf("a token is required: --token or PARLEY_TOKEN (the first admin token is in <data-dir>/admin-token)")
	}
	c.url = strings.TrimRight(c.url, "/")
	ids := newBotMap(getenv, stderr)
	if sub == "deploy" {
		return botDeploy(ctx, c, ids, *botID, pos[0], stdout, stderr)
	}
	return botPull(ctx, c, ids, pos[0], pos[1], *force, stdout)
}

func botTest(ctx context.Context, dir string, stdout io.Writer) error {
	raw, err := botdir.Build(dir)
	if err != nil {
		return err
	}
	if _, _, isCode := botdir.CodeBot(raw); isCode {
		return fmt.Errorf("%s is a code bot: parley bot test runs the scripted conversations of workflow bots", dir)
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

// botDeploy publishes a bot folder: a workflow bot with
// publishFromBotJson, a code bot by updating its code. Nothing is published
// when the deployed version already matches the folder.
func botDeploy(ctx context.Context, c *adminClient, ids *botMap, botID, dir string, stdout, stderr io.Writer) error {
	raw, err := botdir.Build(dir)
	if err != nil {
		return err
	}
	name, code, isCode := botdir.CodeBot(raw)
	if !isCode {
		if _, err := workflow.Parse(raw); err != nil {
			return err
		}
		var doc struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(raw, &doc)
		name = doc.Name
	}
	if name == "" {
		name = filepath.Base(absDir(dir))
	}
	if err := c.ensureWorkspace(ctx); err != nil {
		return err
	}
	key := botKey{Dir: absDir(dir), URL: c.url, Workspace: c.workspace}
	if botID == "" {
		botID = ids.get(key)
		if botID != "" {
			if _, err := c.getBot(ctx, botID); isNotFound(err) {
				fmt.Fprintf(stderr, "bot %s, where %s was deployed before, no longer exists: creating a new bot\n", botID, dir)
				botID = ""
			} else if err != nil {
				return err
			}
		}
	}
	if botID == "" {
		// An id file written by older versions of parley.
		if b, err := os.ReadFile(filepath.Join(dir, ".parley-bot")); err == nil {
			botID = strings.TrimSpace(string(b))
		}
	}
	var bot map[string]any
	if botID == "" {
		if same, err := c.botsNamed(ctx, name); err == nil && len(same) > 0 {
			fmt.Fprintf(stderr, "note: bot(s) named %q already exist (%s); this folder gets a new one (use --bot ID to deploy to an existing bot)\n",
				name, strings.Join(same, ", "))
		}
		var out struct {
			Bot map[string]any `json:"bot"`
		}
		if err := c.do(ctx, "POST", "/v1/admin/bots", map[string]any{"name": name}, &out); err != nil {
			return err
		}
		botID, _ = out.Bot["id"].(string)
		fmt.Fprintf(stdout, "created bot %s (%s)\n", botID, name)
	} else {
		unchanged, err := c.deployedMatches(ctx, botID, raw, code, isCode)
		if err != nil {
			return err
		}
		if unchanged {
			ids.set(key, botID)
			if bot, err = c.getBot(ctx, botID); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "unchanged: bot %s already runs this version of %s; nothing deployed\n", botID, dir)
			printBotURLs(stdout, bot)
			return nil
		}
	}
	var version struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	if isCode {
		var out struct {
			Bot map[string]any `json:"bot"`
		}
		if err := c.do(ctx, "PUT", "/v1/admin/bots/"+url.PathEscape(botID), map[string]any{"name": name, "code": code}, &out); err != nil {
			return err
		}
		bot = out.Bot
		vs, err := c.versions(ctx, botID)
		if err != nil {
			return err
		}
		if len(vs) > 0 {
			version.ID, version.Name = vs[0].ID, vs[0].Name
		}
	} else {
		var out struct {
			Bot     map[string]any `json:"bot"`
			Version *struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"version"`
		}
		if err := c.do(ctx, "POST", "/v1/admin/bots/"+url.PathEscape(botID)+"/publish-from-bot-json", map[string]any{"botJson": json.RawMessage(raw)}, &out); err != nil {
			return err
		}
		bot = out.Bot
		if out.Version != nil {
			version.ID, version.Name = out.Version.ID, out.Version.Name
		}
	}
	ids.set(key, botID)
	fmt.Fprintf(stdout, "deployed bot %s version %s (%s)\n", botID, version.Name, version.ID)
	printBotURLs(stdout, bot)
	return nil
}

// deployedMatches reports whether the bot's deployed version is the
// folder's: the same bot JSON document (compared as JSON values), or for a
// code bot the same code.
func (c *adminClient) deployedMatches(ctx context.Context, botID string, raw json.RawMessage, code string, isCode bool) (bool, error) {
	if isCode {
		cur, err := c.deployedCode(ctx, botID)
		if err != nil || cur == nil {
			return false, err
		}
		return *cur == code, nil
	}
	var out struct {
		BotJSON json.RawMessage `json:"botJson"`
	}
	if err := c.do(ctx, "GET", "/v1/admin/bots/"+url.PathEscape(botID)+"/bot-json", nil, &out); err != nil {
		if isNotFound(err) { // never deployed, or deployed as code
			if _, err := c.getBot(ctx, botID); err != nil {
				return false, err
			}
			return false, nil
		}
		return false, err
	}
	return jsonEqual(out.BotJSON, raw), nil
}

// printBotURLs prints where to talk to a bot: its Chat API URL and its
// hosted webchat page, {public-url}/w/{clientId}, where the client id is
// the webchat integration's webhookId (docs/webchat.md).
func printBotURLs(w io.Writer, bot map[string]any) {
	ins, _ := bot["integrations"].(map[string]any)
	chat, _ := ins["chat"].(map[string]any)
	if u, _ := chat["webhookUrl"].(string); u != "" {
		fmt.Fprintf(w, "  Chat API:     %s\n", u)
	}
	wc, _ := ins["webchat"].(map[string]any)
	id, _ := wc["webhookId"].(string)
	hook, _ := wc["webhookUrl"].(string)
	if id == "" || hook == "" {
		return
	}
	if enabled, ok := wc["enabled"].(bool); ok && !enabled {
		fmt.Fprintf(w, "  Hosted page:  off (integrations.webchat.enabled is false)\n")
		return
	}
	base := strings.TrimSuffix(hook, "/webchat/"+id)
	fmt.Fprintf(w, "  Hosted page:  %s/w/%s\n", base, url.PathEscape(id))
}

// botPull exports a deployed bot into a folder. A new or empty folder gets
// the bot; a bot folder is merged into; any existing file whose content
// would change is only overwritten with force.
func botPull(ctx context.Context, c *adminClient, ids *botMap, botID, dir string, force bool, stdout io.Writer) error {
	if err := c.ensureWorkspace(ctx); err != nil {
		return err
	}
	doc, kind, err := c.pullDocument(ctx, botID)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if len(entries) > 0 && !fileExists(filepath.Join(dir, botdir.BotFile)) && !force {
		return fmt.Errorf("%s is not empty and holds no %s: pull into a new folder, or pass --force to add the bot's files to it", dir, botdir.BotFile)
	}
	files, err := botdir.Export(dir, doc)
	if err != nil {
		return err
	}
	var conflicts, names []string
	for _, f := range files {
		names = append(names, f.Path)
		if f.Exists {
			conflicts = append(conflicts, f.Path)
		}
	}
	if len(conflicts) > 0 && !force {
		return fmt.Errorf("pulling bot %s would overwrite %d file(s) of %s that differ from it: %s\npass --force to overwrite them (bot.yaml keeps its comments and file names; other files are left alone)",
			botID, len(conflicts), dir, strings.Join(conflicts, ", "))
	}
	if err := botdir.WriteFiles(dir, files); err != nil {
		return err
	}
	ids.set(botKey{Dir: absDir(dir), URL: c.url, Workspace: c.workspace}, botID)
	if len(files) == 0 {
		fmt.Fprintf(stdout, "%s already matches bot %s (%s): nothing written\n", dir, botID, kind)
		return nil
	}
	fmt.Fprintf(stdout, "pulled bot %s (%s) into %s: %s\n", botID, kind, dir, strings.Join(names, ", "))
	return nil
}

// pullDocument returns the deployed bot as a folder document: the bot JSON
// of a workflow bot, { name, code } for a code bot.
func (c *adminClient) pullDocument(ctx context.Context, botID string) (json.RawMessage, string, error) {
	var out struct {
		BotJSON json.RawMessage `json:"botJson"`
	}
	err := c.do(ctx, "GET", "/v1/admin/bots/"+url.PathEscape(botID)+"/bot-json", nil, &out)
	if err == nil {
		return out.BotJSON, "workflow bot", nil
	}
	if !isNotFound(err) {
		return nil, "", err
	}
	bot, err := c.getBot(ctx, botID)
	if err != nil {
		return nil, "", err
	}
	code, err := c.deployedCode(ctx, botID)
	if err != nil {
		return nil, "", err
	}
	if code == nil {
		return nil, "", fmt.Errorf("bot %s has never been deployed: nothing to pull", botID)
	}
	name, _ := bot["name"].(string)
	doc, err := json.Marshal(struct {
		Name string `json:"name,omitempty"`
		Code string `json:"code"`
	}{name, *code})
	return doc, "code bot", err
}

// deployedCode is the code of the bot's deployed version (the newest: every
// version is deployed when it is created), nil when it has none.
func (c *adminClient) deployedCode(ctx context.Context, botID string) (*string, error) {
	vs, err := c.versions(ctx, botID)
	if err != nil || len(vs) == 0 {
		return nil, err
	}
	var out struct {
		Version struct {
			Code string `json:"code"`
		} `json:"version"`
	}
	if err := c.do(ctx, "GET", "/v1/admin/bots/"+url.PathEscape(botID)+"/versions/"+url.PathEscape(vs[0].ID), nil, &out); err != nil {
		return nil, err
	}
	return &out.Version.Code, nil
}

type versionRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// versions lists a bot's versions, newest first.
func (c *adminClient) versions(ctx context.Context, botID string) ([]versionRef, error) {
	var out struct {
		Versions []versionRef `json:"versions"`
	}
	err := c.do(ctx, "GET", "/v1/admin/bots/"+url.PathEscape(botID)+"/versions", nil, &out)
	return out.Versions, err
}

func (c *adminClient) getBot(ctx context.Context, botID string) (map[string]any, error) {
	var out struct {
		Bot map[string]any `json:"bot"`
	}
	err := c.do(ctx, "GET", "/v1/admin/bots/"+url.PathEscape(botID), nil, &out)
	return out.Bot, err
}

// botsNamed lists the ids of the workspace's bots with this name.
func (c *adminClient) botsNamed(ctx context.Context, name string) ([]string, error) {
	var ids []string
	next := ""
	for range 50 {
		var out struct {
			Bots []struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"bots"`
			Meta struct {
				NextToken string `json:"nextToken"`
			} `json:"meta"`
		}
		p := "/v1/admin/bots"
		if next != "" {
			p += "?nextToken=" + url.QueryEscape(next)
		}
		if err := c.do(ctx, "GET", p, nil, &out); err != nil {
			return nil, err
		}
		for _, b := range out.Bots {
			if b.Name == name {
				ids = append(ids, b.ID)
			}
		}
		if next = out.Meta.NextToken; next == "" {
			break
		}
	}
	return ids, nil
}

func absDir(dir string) string {
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return filepath.Clean(dir)
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// httpError is an Admin API error answer.
type httpError struct {
	method, path string
	status       int
	typ, message string
}

func (e *httpError) Error() string {
	if e.message != "" {
		return fmt.Sprintf("%s %s: %d %s: %s", e.method, e.path, e.status, e.typ, e.message)
	}
	return fmt.Sprintf("%s %s: %d", e.method, e.path, e.status)
}

func isNotFound(err error) bool {
	var he *httpError
	return errors.As(err, &he) && he.status == http.StatusNotFound
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
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("no Parley server answers at %s (is `parley serve` running? set --url or PARLEY_URL): %w", c.url, err)
		}
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
		_ = json.Unmarshal(data, &e)
		return &httpError{method: method, path: path, status: res.StatusCode, typ: e.Type, message: e.Message}
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}
