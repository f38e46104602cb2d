package botdir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// File is a file that Export would write: its path inside the folder (with
// forward slashes) and its new content. Exists tells whether a file with
// other content is there now.
type File struct {
	Path   string
	Data   []byte
	Exists bool
}

// Export plans writing a bot JSON document into a folder and returns the
// files that would be created or changed (identical files are left out).
//
// Into an empty folder it writes bot.yaml, with hooks, actions, multi-line
// code cards and a code bot's code in .js files. Into a folder that already
// holds a bot, it merges: bot.yaml keeps its comments, key order and
// formatting where the values did not change, "file:" references keep
// their file names (the new text goes to the same file), and files bot.yaml
// does not reference, such as tests/, are not touched. bot.yaml is only
// rewritten when a value in it changed.
func Export(dir string, doc json.RawMessage) ([]File, error) {
	var nw yaml.Node
	if err := yaml.Unmarshal(doc, &nw); err != nil {
		return nil, fmt.Errorf("bot JSON: %w", err)
	}
	if nw.Kind != yaml.DocumentNode || len(nw.Content) != 1 || nw.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("bot JSON: not an object")
	}
	m := &merger{dir: dir, files: map[string]string{}, fresh: map[*yaml.Node]bool{}, used: map[string]bool{}}
	var out *yaml.Node
	old, err := readBotFile(dir)
	switch {
	case err == nil:
		collectRefs(old, m.used)
		root := m.merge(old.Content[0], nw.Content[0])
		if !m.changed {
			out = nil
		} else {
			cp := *old
			cp.Content = []*yaml.Node{root}
			out = &cp
		}
	case os.IsNotExist(err):
		m.markFresh(nw.Content[0])
		out = &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{nw.Content[0]}}
		if _, _, isCode := CodeBot(doc); isCode {
			out.HeadComment = "A Parley code bot (docs/runtime.md): `parley bot deploy` sends the code file as the bot's code."
		} else {
			out.HeadComment = "A Parley workflow bot. See docs/bot-json.md for the format.\nStrings written \"file:<path>\" are replaced by that file when the bot is built."
		}
	default:
		return nil, err
	}
	if out != nil {
		m.externalize(out.Content[0], nil, nil)
	}

	var files []File
	add := func(p string, data []byte) error {
		full := filepath.Join(dir, filepath.FromSlash(p))
		cur, err := os.ReadFile(full)
		switch {
		case err == nil:
			if bytes.Equal(cur, data) || (p != BotFile && strings.TrimRight(string(cur), "\n") == strings.TrimRight(string(data), "\n")) {
				return nil
			}
			files = append(files, File{Path: p, Data: data, Exists: true})
		case os.IsNotExist(err):
			files = append(files, File{Path: p, Data: data})
		default:
			return err
		}
		return nil
	}
	if out != nil {
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(out); err != nil {
			return nil, err
		}
		enc.Close()
		if err := add(BotFile, b.Bytes()); err != nil {
			return nil, err
		}
	}
	paths := make([]string, 0, len(m.files))
	for p := range m.files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		if err := add(p, []byte(m.files[p]+"\n")); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// WriteFiles writes the files Export planned.
func WriteFiles(dir string, files []File) error {
	for _, f := range files {
		full := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Write exports a bot JSON document into a folder, overwriting what Export
// would change.
func Write(dir string, botJSON json.RawMessage) error {
	files, err := Export(dir, botJSON)
	if err != nil {
		return err
	}
	return WriteFiles(dir, files)
}

type merger struct {
	dir     string
	files   map[string]string // path → text to write (no final newline)
	fresh   map[*yaml.Node]bool
	used    map[string]bool // paths referenced or written
	changed bool            // bot.yaml itself changes
}

// merge returns the node to write for old (from bot.yaml) given the new
// value nw.
func (m *merger) merge(old, nw *yaml.Node) *yaml.Node {
	if old == nil {
		m.changed = true
		m.markFresh(nw)
		return nw
	}
	if m.same(old, nw) {
		return old
	}
	switch {
	case isFileRef(old) && nw.Kind == yaml.ScalarNode && nw.ShortTag() == "!!str":
		if p, err := refPath(strings.TrimPrefix(old.Value, filePrefix)); err == nil {
			m.files[filepath.ToSlash(p)] = nw.Value
			return old
		}
	case old.Kind == yaml.MappingNode && nw.Kind == yaml.MappingNode && !hasMergeKey(old):
		out := *old
		out.Content = nil
		idx := map[string]int{}
		for j := 0; j+1 < len(nw.Content); j += 2 {
			idx[nw.Content[j].Value] = j
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(old.Content); i += 2 {
			k := old.Content[i].Value
			j, ok := idx[k]
			if !ok || seen[k] {
				m.changed = true
				continue
			}
			seen[k] = true
			out.Content = append(out.Content, old.Content[i], m.merge(old.Content[i+1], nw.Content[j+1]))
		}
		for j := 0; j+1 < len(nw.Content); j += 2 {
			if !seen[nw.Content[j].Value] {
				m.changed = true
				m.markFresh(nw.Content[j])
				m.markFresh(nw.Content[j+1])
				out.Content = append(out.Content, nw.Content[j], nw.Content[j+1])
			}
		}
		return &out
	case old.Kind == yaml.SequenceNode && nw.Kind == yaml.SequenceNode:
		out := *old
		out.Content = nil
		for i, c := range nw.Content {
			var o *yaml.Node
			if i < len(old.Content) {
				o = old.Content[i]
			}
			out.Content = append(out.Content, m.merge(o, c))
		}
		if len(nw.Content) != len(old.Content) {
			m.changed = true
		}
		return &out
	}
	m.changed = true
	m.markFresh(nw)
	nw.HeadComment, nw.LineComment, nw.FootComment = old.HeadComment, old.LineComment, old.FootComment
	return nw
}

// same reports whether old (with its file references read) has the value nw.
func (m *merger) same(old, nw *yaml.Node) bool {
	a, err := toValue(old, m.dir, true)
	if err != nil {
		return false
	}
	b, err := toValue(nw, m.dir, false)
	if err != nil {
		return false
	}
	return reflect.DeepEqual(plain(a), plain(b))
}

// plain turns a value into its JSON-decoded form (maps, float64).
func plain(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

// markFresh marks a new subtree (parsed from JSON) and gives it block
// style: the block style of YAML, multi-line strings as literal blocks.
func (m *merger) markFresh(n *yaml.Node) {
	m.fresh[n] = true
	n.Style = 0
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && strings.Contains(n.Value, "\n") {
		n.Style = yaml.LiteralStyle
	}
	for _, c := range n.Content {
		m.markFresh(c)
	}
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// externalize moves the code of new hooks, actions, multi-line code cards
// and a code bot's code into .js files.
func (m *merger) externalize(n *yaml.Node, path []string, parent *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			m.externalize(n.Content[i+1], append(slices.Clip(path), n.Content[i].Value), n)
		}
		return
	case yaml.SequenceNode:
		for i, c := range n.Content {
			m.externalize(c, append(slices.Clip(path), fmt.Sprint(i)), n)
		}
		return
	case yaml.ScalarNode:
	default:
		return
	}
	if !m.fresh[n] || n.ShortTag() != "!!str" || strings.HasPrefix(n.Value, filePrefix) {
		return
	}
	safe := func(s string) string { return unsafeName.ReplaceAllString(s, "_") }
	var p string
	switch {
	case len(path) == 1 && path[0] == "code":
		p = CodeFile
	case len(path) == 2 && path[0] == "hooks":
		p = "hooks/" + safe(path[1]) + ".js"
	case len(path) == 3 && path[0] == "actions" && path[2] == "code":
		p = "actions/" + safe(path[1]) + ".js"
	case len(path) == 7 && path[0] == "workflows" && path[2] == "nodes" && path[4] == "cards" && path[6] == "code" &&
		mapValue(parent, "type") == "code" && strings.Contains(n.Value, "\n"):
		p = "code/" + safe(path[1]+"-"+path[3]+"-"+path[5]) + ".js"
	default:
		return
	}
	base := strings.TrimSuffix(p, ".js")
	for i := 2; m.used[p]; i++ {
		p = fmt.Sprintf("%s-%d.js", base, i)
	}
	m.used[p] = true
	m.files[p] = n.Value
	n.Value, n.Style = filePrefix+p, 0
}

func mapValue(n *yaml.Node, key string) string {
	if n == nil || n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1].Value
		}
	}
	return ""
}

func isFileRef(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && strings.HasPrefix(n.Value, filePrefix)
}

func hasMergeKey(n *yaml.Node) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].ShortTag() == "!!merge" {
			return true
		}
	}
	return false
}

// collectRefs records the files a bot.yaml references.
func collectRefs(n *yaml.Node, used map[string]bool) {
	if isFileRef(n) {
		if p, err := refPath(strings.TrimPrefix(n.Value, filePrefix)); err == nil {
			used[filepath.ToSlash(p)] = true
		}
	}
	for _, c := range n.Content {
		collectRefs(c, used)
	}
}
