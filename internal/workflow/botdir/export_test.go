package botdir

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const sampleYAML = `# My support bot.
name: support # shown in the dashboard
workflows:
  main:
    nodes:
      start:
        type: start
        cards:
          - { type: message, payload: "Hello!" } # greeting
          - { type: code, code: file:src/count.js }
settings:
  inactivityTimeout: 30
hooks:
  before_incoming_message: file:src/filter.js
`

func writeFolder(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func sampleFolder(t *testing.T) string {
	return writeFolder(t, map[string]string{
		BotFile:           sampleYAML,
		"src/count.js":    "user.n = (user.n || 0) + 1\nlogger.info(user.n)\n",
		"src/filter.js":   "if (event.preview === '') return { stop: true }\n",
		"tests/t.yaml":    "name: t\nconversation:\n  - user: hi\n  - bot: Hello!\n",
		"notes/readme.md": "mine\n",
	})
}

func decode(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestBuildKeepsKeyOrder: the built document lists keys in bot.yaml's order.
func TestBuildKeepsKeyOrder(t *testing.T) {
	raw, err := Build(sampleFolder(t))
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	if !(strings.Index(s, `"name"`) < strings.Index(s, `"workflows"`) && strings.Index(s, `"workflows"`) < strings.Index(s, `"settings"`) &&
		strings.Index(s, `"settings"`) < strings.Index(s, `"hooks"`)) {
		t.Fatalf("key order lost:\n%s", s)
	}
	if !strings.Contains(s, `"user.n = (user.n || 0) + 1\nlogger.info(user.n)"`) {
		t.Fatalf("file not inlined:\n%s", s)
	}
	if err := os.WriteFile(filepath.Join(t.TempDir(), "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dup := writeFolder(t, map[string]string{BotFile: "name: a\nname: b\n"})
	if _, err := Build(dup); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("duplicate key: %v", err)
	}
	out := writeFolder(t, map[string]string{BotFile: "hooks: { a: 'file:../x.js' }\n"})
	if _, err := Build(out); err == nil || !strings.Contains(err.Error(), "inside the bot folder") {
		t.Fatalf("file outside: %v", err)
	}
}

// TestExportUnchangedFolder: pulling the document a folder builds changes
// nothing in it.
func TestExportUnchangedFolder(t *testing.T) {
	dir := sampleFolder(t)
	raw, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := Export(dir, raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 0 {
		t.Fatalf("unchanged folder would get %d files: %+v", len(files), files)
	}
}

// TestExportMerges: a changed document is merged into the folder: comments
// and key order of bot.yaml stay, the hook's new text goes to the file
// bot.yaml names, other files stay.
func TestExportMerges(t *testing.T) {
	dir := sampleFolder(t)
	raw, _ := Build(dir)
	var doc map[string]any
	json.Unmarshal(raw, &doc)
	doc["hooks"].(map[string]any)["before_incoming_message"] = "return { stop: false }"
	doc["hooks"].(map[string]any)["after_incoming_message"] = "logger.info('in')\nlogger.info('out')"
	doc["settings"].(map[string]any)["inactivityTimeout"] = 45
	doc["description"] = "helps"
	changed, _ := json.Marshal(doc) // keys sorted: the server's order differs from the folder's

	files, err := Export(dir, changed)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]File{}
	for _, f := range files {
		got[f.Path] = f
	}
	if len(got) != 3 || !got[BotFile].Exists || !got["src/filter.js"].Exists || got["hooks/after_incoming_message.js"].Exists {
		t.Fatalf("files = %+v", files)
	}
	y := string(got[BotFile].Data)
	for _, want := range []string{"# My support bot.", "# shown in the dashboard", "# greeting", "file:src/count.js", "file:src/filter.js",
		"inactivityTimeout: 45", "file:hooks/after_incoming_message.js"} {
		if !strings.Contains(y, want) {
			t.Errorf("bot.yaml lacks %q:\n%s", want, y)
		}
	}
	if strings.Index(y, "workflows:") > strings.Index(y, "settings:") {
		t.Errorf("key order changed:\n%s", y)
	}
	if err := WriteFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	again, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(decode(t, again), decode(t, changed)) {
		t.Fatalf("after the merge the folder builds\n%s\nnot\n%s", again, changed)
	}
	for _, p := range []string{"tests/t.yaml", "notes/readme.md", "src/count.js"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestExportFreshFolder writes a document into a new folder and a code bot.
func TestExportFreshFolder(t *testing.T) {
	raw, _ := Build(sampleFolder(t))
	dir := filepath.Join(t.TempDir(), "new")
	if err := Write(dir, raw); err != nil {
		t.Fatal(err)
	}
	y, _ := os.ReadFile(filepath.Join(dir, BotFile))
	for _, want := range []string{"file:hooks/before_incoming_message.js", "file:code/main-start-1.js", "inactivityTimeout: 30", "payload: Hello!"} {
		if !strings.Contains(string(y), want) {
			t.Errorf("bot.yaml lacks %q:\n%s", want, y)
		}
	}
	if strings.Index(string(y), "workflows:") > strings.Index(string(y), "settings:") {
		t.Errorf("key order changed:\n%s", y)
	}
	back, err := Build(dir)
	if err != nil || !reflect.DeepEqual(decode(t, back), decode(t, raw)) {
		t.Fatalf("round trip: %v\n%s\n%s", err, back, raw)
	}

	code := "bot.on.message('text', async () => {\n  // hi\n})"
	doc, _ := json.Marshal(map[string]string{"name": "echo", "code": code})
	cdir := t.TempDir()
	if err := Write(cdir, doc); err != nil {
		t.Fatal(err)
	}
	js, _ := os.ReadFile(filepath.Join(cdir, CodeFile))
	if string(js) != code+"\n" {
		t.Fatalf("bot.js = %q", js)
	}
	built, err := Build(cdir)
	if err != nil {
		t.Fatal(err)
	}
	if name, c, ok := CodeBot(built); !ok || name != "echo" || c != code {
		t.Fatalf("CodeBot = %q %q %v", name, c, ok)
	}
	if _, _, ok := CodeBot(raw); ok {
		t.Fatal("a workflow bot taken for a code bot")
	}
}
