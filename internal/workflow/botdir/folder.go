package botdir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// BotFile is the bot's main file inside a folder.
const BotFile = "bot.yaml"

// CodeFile is where a pulled code bot's code goes.
const CodeFile = "bot.js"

const filePrefix = "file:"

// Build reads a bot folder and returns its bot JSON document: bot.yaml with
// every "file:<path>" string replaced by that file's text. Keys keep the
// order they have in bot.yaml, so a document pulled back reads the same.
func Build(dir string) (json.RawMessage, error) {
	root, err := readBotFile(dir)
	if err != nil {
		return nil, err
	}
	v, err := toValue(root, dir, true)
	if err != nil {
		return nil, err
	}
	return json.MarshalIndent(v, "", "  ")
}

// CodeBot reports whether a built document is a code bot's (a top-level
// "code" string and no "workflows") and returns its name and code.
func CodeBot(doc json.RawMessage) (name, code string, ok bool) {
	var d map[string]json.RawMessage
	if json.Unmarshal(doc, &d) != nil {
		return "", "", false
	}
	if _, wf := d["workflows"]; wf || json.Unmarshal(d["code"], &code) != nil || d["code"] == nil {
		return "", "", false
	}
	_ = json.Unmarshal(d["name"], &name)
	return name, code, true
}

func readBotFile(dir string) (*yaml.Node, error) {
	raw, err := os.ReadFile(filepath.Join(dir, BotFile))
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", BotFile, err)
	}
	if doc.Kind == 0 {
		return nil, fmt.Errorf("%s is empty", filepath.Join(dir, BotFile))
	}
	return &doc, nil
}

// object is a JSON object that keeps its keys in order.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// toValue converts a YAML node into a JSON value (objects as *object);
// with inline set, "file:<path>" strings are replaced by the file's text.
// A recursive alias, or aliases expanding past maxNodes, is an error: the
// YAML decoder's own expansion limits do not apply to a walk of its nodes.
func toValue(n *yaml.Node, dir string, inline bool) (any, error) {
	c := &converter{dir: dir, inline: inline, left: maxNodes}
	return c.value(n, 0)
}

// Limits of one conversion.
const (
	maxDepth = 200
	maxNodes = 1 << 20
)

type converter struct {
	dir    string
	inline bool
	left   int // nodes that may still be expanded
}

func (c *converter) value(n *yaml.Node, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("line %d: nesting too deep (a recursive alias?)", n.Line)
	}
	if c.left--; c.left < 0 {
		return nil, fmt.Errorf("line %d: aliases expand to too many values", n.Line)
	}
	dir, inline := c.dir, c.inline
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0], depth+1)
	case yaml.AliasNode:
		return c.value(n.Alias, depth+1)
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, err
		}
		if s, ok := v.(string); ok && inline {
			if p, ok := strings.CutPrefix(s, filePrefix); ok {
				return readRef(dir, p, s)
			}
		}
		return v, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, item := range n.Content {
			v, err := c.value(item, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		o := &object{vals: map[string]any{}}
		var merged []*object
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, vn := n.Content[i], n.Content[i+1]
			if k.ShortTag() == "!!merge" {
				v, err := c.value(vn, depth+1)
				if err != nil {
					return nil, err
				}
				switch m := v.(type) {
				case *object:
					merged = append(merged, m)
				case []any:
					for _, it := range m {
						if mo, ok := it.(*object); ok {
							merged = append(merged, mo)
						}
					}
				}
				continue
			}
			if _, dup := o.vals[k.Value]; dup {
				return nil, fmt.Errorf("%s: line %d: key %q appears twice", BotFile, k.Line, k.Value)
			}
			v, err := c.value(vn, depth+1)
			if err != nil {
				return nil, err
			}
			o.set(k.Value, v)
		}
		for _, m := range merged {
			for _, k := range m.keys {
				if _, ok := o.vals[k]; !ok {
					o.set(k, m.vals[k])
				}
			}
		}
		return o, nil
	}
	return nil, fmt.Errorf("%s: line %d: unsupported YAML node", BotFile, n.Line)
}

// refPath checks the path of a "file:" reference: relative, inside the folder.
func refPath(p string) (string, error) {
	p = strings.TrimSpace(p)
	clean := filepath.Clean(filepath.FromSlash(p))
	if p == "" || filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s%s: files must be inside the bot folder", filePrefix, p)
	}
	return clean, nil
}

func readRef(dir, p, orig string) (string, error) {
	clean, err := refPath(p)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(dir, clean))
	if err != nil {
		return "", fmt.Errorf("%s: %w", orig, err)
	}
	return strings.TrimRight(string(b), "\n"), nil
}
