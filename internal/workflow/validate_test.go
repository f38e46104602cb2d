package workflow

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestInvalidFixtures checks that each invalid document is refused with
// exactly the expected JSON pointers (in order, duplicates removed).
func TestInvalidFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid/*.json")
	if len(files) < 10 {
		t.Fatalf("only %d fixtures", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var fx struct {
				Expect  []string        `json:"expect"`
				BotJSON json.RawMessage `json:"botJson"`
			}
			if err := json.Unmarshal(raw, &fx); err != nil {
				t.Fatal(err)
			}
			_, err = Parse(fx.BotJSON)
			ve, ok := err.(*ValidationError)
			if !ok {
				t.Fatalf("Parse = %v, want a ValidationError", err)
			}
			got := slices.Compact(ve.Pointers())
			if !slices.Equal(got, fx.Expect) {
				t.Fatalf("pointers = %q, want %q\n%v", got, fx.Expect, ve)
			}
			me := ve.ModelError()
			if me.Metadata["errors"] == nil || !strings.Contains(me.Message, fx.Expect[0]) {
				t.Fatalf("model error = %+v", me)
			}
		})
	}
}

func TestValidFixturesAndExamplesParse(t *testing.T) {
	files, _ := filepath.Glob("testdata/valid/*.json")
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		if _, err := Parse(raw); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestTemplates(t *testing.T) {
	parts, err := parseTemplate(`a {{ x }} b \{{ c {{y}}`)
	if err != nil || len(parts) != 4 || parts[1].text != "x" || parts[2].text != " b {{ c " || parts[3].text != "y" {
		t.Fatalf("%+v %v", parts, err)
	}
	if _, err := parseTemplate("{{ x"); err == nil {
		t.Fatal("unclosed accepted")
	}
}
