// Package botdir reads and writes bot folders: a bot.yaml file (the bot
// JSON document as YAML) plus JavaScript files that it references with
// "file:<path>" strings (hooks, actions, code cards), and scripted
// conversations under tests/*.yaml. A code bot's folder is a bot.yaml with
// a top-level "code" (usually "file:bot.js") and no workflows.
// `parley bot` uses it.
package botdir

import (
	"context"
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
