package files

import (
	"reflect"
	"strings"
	"testing"
)

func shares(a, b string) bool {
	set := map[string]bool{}
	for _, t := range Terms(a) {
		set[t] = true
	}
	for _, t := range Terms(b) {
		if set[t] {
			return true
		}
	}
	return false
}

func TestTermsStemEnglishAndFrench(t *testing.T) {
	for _, c := range [][2]string{
		{"refunds", "refunded"}, {"charging", "charge"}, {"guaranteed", "guarantee"},
		{"remboursements", "remboursé"}, {"magasins", "magasin"}, {"effectuées", "effectué"},
	} {
		if !shares(c[0], c[1]) {
			t.Errorf("%q and %q share no term: %v / %v", c[0], c[1], Terms(c[0]), Terms(c[1]))
		}
	}
	if got := Terms("the and le la"); len(got) != 0 {
		t.Errorf("stop words kept: %v", got)
	}
}

func TestMarkdownBreadcrumbs(t *testing.T) {
	ps := chunk(extractMarkdown("# Guide\n\nIntro text.\n\n## Setup\n\nStep one.\n\n```\n# not a heading\n```\n\n### Linux\n\nApt.\n\n## Use\n\nRun it."))
	var got []string
	for _, p := range ps {
		got = append(got, p.subtype+"|"+p.breadcrumb+"|"+p.text)
	}
	want := []string{"title|Guide|Guide", "paragraph|Guide|Intro text.", "subtitle|Guide > Setup|Setup",
		"paragraph|Guide > Setup|Step one.", "paragraph|Guide > Setup|# not a heading", "subtitle|Guide > Setup > Linux|Linux",
		"paragraph|Guide > Setup > Linux|Apt.", "subtitle|Guide > Use|Use", "paragraph|Guide > Use|Run it."}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestHTML(t *testing.T) {
	bs := extractHTML(`<html><head><title>T</title><script>var x = "<p>no</p>"</script></head><body><h2>Caf&eacute;</h2><p>Open <b>daily</b>.</p><ul><li>one</li><li>two</li></ul></body></html>`)
	var got []string
	for _, b := range bs {
		got = append(got, strings.Repeat("#", b.level)+b.text)
	}
	want := []string{"##Café", "Open daily .", "one", "two"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSplitLongParagraphs(t *testing.T) {
	long := strings.Repeat("A sentence of some length here. ", 100)
	parts := split(strings.TrimSpace(long), maxPassage)
	if len(parts) < 3 {
		t.Fatalf("parts = %d", len(parts))
	}
	for _, p := range parts {
		if len(p) > maxPassage || !strings.HasSuffix(p, ".") {
			t.Errorf("part of %d bytes: %q...", len(p), p[:40])
		}
	}
	if got := split("short", maxPassage); len(got) != 1 {
		t.Errorf("short: %v", got)
	}
}

func TestUnsupportedAndBrokenFiles(t *testing.T) {
	if _, err := extract("image/png", "a.png", []byte{1}); err == nil || !strings.Contains(err.Error(), "cannot be indexed") {
		t.Errorf("png: %v", err)
	}
	if _, err := extract("application/pdf", "a.pdf", []byte("%PDF-1.4 broken")); err == nil {
		t.Error("a broken PDF was read")
	}
}
