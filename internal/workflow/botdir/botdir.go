// Package botdir reads and writes workflow bot folders: a bot.yaml file
// (the bot JSON document as YAML) plus JavaScript files that it references
// with "file:<path>" strings (hooks, actions, code cards), and scripted
// conversations under tests/*.yaml. `parley bot` uses it.
package botdir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/parley-bots/parley/internal/runtime"
	"github.com/parley-bots/parley/internal/workflow"
)

// BotFile is the bot's main file inside a folder.
const BotFile = "bot.yaml"

const filePrefix = "file:"

// Build reads a bot folder and returns its bot JSON document: bot.yaml with
// every "file:<path>" string replaced by that file's text.
func Build(dir string) (json.RawMessage, error) {
	raw, err := os.ReadFile(filepath.Join(dir, BotFile))
	if err != nil {
		return nil, err
	}
	var doc any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", BotFile, err)
	}
	doc, err = inline(dir, normalizeYAML(doc))
	if err != nil {
		return nil, err
	}
	return json.MarshalIndent(doc, "", "  ")
}

// normalizeYAML turns YAML maps with non-string keys into JSON objects.
func normalizeYAML(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, it := range x {
			x[k] = normalizeYAML(it)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, it := range x {
			m[fmt.Sprint(k)] = normalizeYAML(it)
		}
		return m
	case []any:
		for i, it := range x {
			x[i] = normalizeYAML(it)
		}
	}
	return v
}

func inline(dir string, v any) (any, error) {
	switch x := v.(type) {
	case string:
		if p, ok := strings.CutPrefix(x, filePrefix); ok {
			p = strings.TrimSpace(p)
			if filepath.IsAbs(p) || strings.HasPrefix(filepath.Clean(p), "..") {
				return nil, fmt.Errorf("%s: files must be inside the bot folder", x)
			}
			b, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				return nil, err
			}
			return strings.TrimRight(string(b), "\n"), nil
		}
	case map[string]any:
		for k, it := range x {
			n, err := inline(dir, it)
			if err != nil {
				return nil, err
			}
			x[k] = n
		}
	case []any:
		for i, it := range x {
			n, err := inline(dir, it)
			if err != nil {
				return nil, err
			}
			x[i] = n
		}
	}
	return v, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// Write exports a bot JSON document to a folder: hooks, actions and code
// cards go to .js files referenced from bot.yaml.
func Write(dir string, botJSON json.RawMessage) error {
	var doc map[string]any
	if err := json.Unmarshal(botJSON, &doc); err != nil {
		return err
	}
	files := map[string]string{}
	ref := func(path, code string) string {
		files[path] = code
		return filePrefix + path
	}
	if hooks, ok := doc["hooks"].(map[string]any); ok {
		for name, code := range hooks {
			if s, ok := code.(string); ok {
				hooks[name] = ref("hooks/"+unsafeName.ReplaceAllString(name, "_")+".js", s)
			}
		}
	}
	if actions, ok := doc["actions"].(map[string]any); ok {
		for name, a := range actions {
			if m, ok := a.(map[string]any); ok {
				if s, ok := m["code"].(string); ok {
					m["code"] = ref("actions/"+unsafeName.ReplaceAllString(name, "_")+".js", s)
				}
			}
		}
	}
	if flows, ok := doc["workflows"].(map[string]any); ok {
		for fid, f := range flows {
			nodes, _ := f.(map[string]any)["nodes"].(map[string]any)
			for nid, n := range nodes {
				cards, _ := n.(map[string]any)["cards"].([]any)
				for i, c := range cards {
					if m, ok := c.(map[string]any); ok && m["type"] == "code" {
						if s, ok := m["code"].(string); ok && strings.Contains(s, "\n") {
							name := unsafeName.ReplaceAllString(fmt.Sprintf("%s-%s-%d", fid, nid, i), "_")
							m["code"] = ref("code/"+name+".js", s)
						}
					}
				}
			}
		}
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for p, code := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(code+"\n"), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, BotFile), out, 0o644)
}

// Script is a scripted conversation: steps alternate user input and what
// the bot should say.
type Script struct {
	Name  string `yaml:"name" json:"name"`
	Steps []Step `yaml:"conversation" json:"conversation"`
	File  string `yaml:"-" json:"file"`
}

// Step is one line of a script: exactly one of User, Bot or Event.
// Bot is the expected preview of the next bot message (runtime.Preview:
// the text of a text message, the text and [labels] of a choice); a
// value written /like this/ is a regular expression.
type Step struct {
	User  string         `yaml:"user,omitempty" json:"user,omitempty"`
	Value string         `yaml:"value,omitempty" json:"value,omitempty"` // button value sent with User
	Bot   *string        `yaml:"bot,omitempty" json:"bot,omitempty"`
	Event map[string]any `yaml:"event,omitempty" json:"event,omitempty"`
}

// LoadScripts reads tests/*.yaml of a bot folder.
func LoadScripts(dir string) ([]Script, error) {
	files, err := filepath.Glob(filepath.Join(dir, "tests", "*.yaml"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	var out []Script
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		dec := yaml.NewDecoder(strings.NewReader(string(raw)))
		for {
			var s Script
			if err := dec.Decode(&s); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			s.File = filepath.Base(f)
			if s.Name == "" {
				s.Name = strings.TrimSuffix(s.File, ".yaml")
			}
			for _, st := range s.Steps {
				n := 0
				if st.User != "" {
					n++
				}
				if st.Bot != nil {
					n++
				}
				if st.Event != nil {
					n++
				}
				if n != 1 {
					return nil, fmt.Errorf("%s (%s): each step has exactly one of user, bot, event", f, s.Name)
				}
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// Matches reports whether a bot message preview matches an expected line.
func Matches(want, got string) bool {
	if len(want) >= 2 && strings.HasPrefix(want, "/") && strings.HasSuffix(want, "/") {
		re, err := regexp.Compile("^(?s:" + want[1:len(want)-1] + ")$")
		return err == nil && re.MatchString(got)
	}
	return strings.TrimSpace(want) == strings.TrimSpace(got)
}

// RunLocal runs a script in process with no server.
func RunLocal(ctx context.Context, engine *runtime.Engine, b *workflow.Bot, s Script) error {
	l := workflow.NewLocal(engine, b)
	var queue []string
	check := func(i int) error {
		if len(queue) > 0 {
			return fmt.Errorf("step %d: the bot also said %q", i+1, queue)
		}
		return nil
	}
	for i, st := range s.Steps {
		var got []map[string]any
		var err error
		switch {
		case st.Bot != nil:
			if len(queue) == 0 {
				return fmt.Errorf("step %d: expected the bot to say %q, it said nothing more%s", i+1, *st.Bot, problems(l))
			}
			if !Matches(*st.Bot, queue[0]) {
				return fmt.Errorf("step %d: expected the bot to say %q, it said %q%s", i+1, *st.Bot, queue[0], problems(l))
			}
			queue = queue[1:]
			continue
		case st.Event != nil:
			if err := check(i); err != nil {
				return err
			}
			got, err = l.Event(ctx, st.Event)
		default:
			if err := check(i); err != nil {
				return err
			}
			p := map[string]any{"type": "text", "text": st.User}
			if st.Value != "" {
				p["value"] = st.Value
			}
			got, err = l.Message(ctx, p)
		}
		if err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
		for _, p := range got {
			queue = append(queue, runtime.Preview(p))
		}
	}
	return check(len(s.Steps))
}

func problems(l *workflow.Local) string {
	var b strings.Builder
	for _, p := range l.Problems {
		fmt.Fprintf(&b, "\n  problem: %s: %s", p.Code, p.Description)
	}
	for _, is := range l.Issues {
		fmt.Fprintf(&b, "\n  issue: %s: %s", is.Code, is.Description)
	}
	return b.String()
}
