package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// botMap remembers which bot each folder was deployed to or pulled from,
// per server and workspace, in <config dir>/bots.json: outside the folder,
// which stays the user's own.
type botMap struct {
	path   string // "" when there is no configuration directory
	stderr io.Writer
}

type botKey struct {
	Dir       string `json:"dir"`
	URL       string `json:"url"`
	Workspace string `json:"workspace"`
}

type botEntry struct {
	botKey
	Bot string `json:"bot"`
}

type botMapFile struct {
	Bots []botEntry `json:"bots"`
}

// configDir is PARLEY_CONFIG_DIR, else <user config dir>/parley.
func configDir(getenv func(string) string) (string, error) {
	if d := getenv("PARLEY_CONFIG_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "parley"), nil
}

func newBotMap(getenv func(string) string, stderr io.Writer) *botMap {
	d, err := configDir(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "note: no configuration directory (%v): pass --bot to deploy to the same bot again\n", err)
		return &botMap{stderr: stderr}
	}
	return &botMap{path: filepath.Join(d, "bots.json"), stderr: stderr}
}

func (m *botMap) load() botMapFile {
	var f botMapFile
	if m.path == "" {
		return f
	}
	if b, err := os.ReadFile(m.path); err == nil {
		if err := json.Unmarshal(b, &f); err != nil {
			fmt.Fprintf(m.stderr, "note: ignoring %s: %v\n", m.path, err)
		}
	}
	return f
}

func (m *botMap) get(k botKey) string {
	for _, e := range m.load().Bots {
		if e.botKey == k {
			return e.Bot
		}
	}
	return ""
}

// set records the folder's bot; a failure to save is only a note.
func (m *botMap) set(k botKey, bot string) {
	if m.path == "" {
		return
	}
	f := m.load()
	f.Bots = slices.DeleteFunc(f.Bots, func(e botEntry) bool { return e.botKey == k })
	f.Bots = append(f.Bots, botEntry{k, bot})
	if err := m.save(f); err != nil {
		fmt.Fprintf(m.stderr, "note: could not remember bot %s for %s (%v): pass --bot %s next time\n", bot, k.Dir, err, bot)
	}
}

func (m *botMap) save(f botMapFile) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(m.path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(m.path), ".bots-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), m.path)
}
