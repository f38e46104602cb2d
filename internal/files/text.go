package files

import (
	"bytes"
	"fmt"
	"html"
	"regexp"
	"strings"
	"unicode"

	"github.com/kljensen/snowball/english"
	"github.com/kljensen/snowball/french"
	"github.com/ledongthuc/pdf"
)

// Terms is what the full-text index holds for text: its words, lower
// case, without the commonest English and French words, each as its
// English and its French Snowball stem. Indexed passages and queries go
// through it alike, so "refunds" finds "refunded" and "remboursements"
// finds "rembourser" whatever the engine's own stemming.
func Terms(text string) []string {
	var out []string
	for _, w := range words(text) {
		if stopWords[w] {
			continue
		}
		en := english.Stem(w, true)
		out = append(out, en)
		if fr := french.Stem(w, true); fr != en {
			out = append(out, fr)
		}
	}
	return out
}

func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or but of to in on at by for with from is are was were be been being
		it its this that these those as do does did have has had i you he she we they me my your our their what which who
		whom how when where why can could will would shall should may might not no yes so if than then there here about
		le la les un une des du de et ou mais à au aux en dans sur par pour avec sans est sont été être il elle ils elles
		je tu nous vous on ce cet cette ces que qui quoi dont où comment quand pourquoi ne pas oui non se sa son ses leur leurs
		mon ma mes ton ta tes notre nos votre vos y d l qu c s n j m t`) {
		m[w] = true
	}
	return m
}()

// block is a piece of a document before chunking: a heading (level 1-6)
// or body text (level 0).
type block struct {
	level int
	text  string
	page  int
}

// extract turns a file's bytes into blocks by content type.
func extract(contentType, key string, data []byte) ([]block, error) {
	ct := strings.ToLower(contentType)
	ext := strings.ToLower(key[strings.LastIndex(key, ".")+1:])
	switch {
	case strings.Contains(ct, "pdf") || ext == "pdf":
		return extractPDF(data)
	case strings.Contains(ct, "html") || ext == "html" || ext == "htm":
		return extractHTML(string(data)), nil
	case strings.Contains(ct, "markdown") || ext == "md" || ext == "markdown":
		return extractMarkdown(string(data)), nil
	case strings.HasPrefix(ct, "text/") || ct == "application/json" || ext == "txt":
		return paragraphs(string(data), 0), nil
	}
	return nil, fmt.Errorf("files of type %q cannot be indexed: text, Markdown, HTML and PDF can", contentType)
}

func paragraphs(text string, page int) []block {
	var out []block
	for _, p := range regexp.MustCompile(`\n\s*\n`).Split(strings.ReplaceAll(text, "\r\n", "\n"), -1) {
		if p = strings.Join(strings.Fields(p), " "); p != "" {
			out = append(out, block{text: p, page: page})
		}
	}
	return out
}

var mdHeading = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)

func extractMarkdown(text string) []block {
	var out []block
	var para []string
	flush := func() {
		out = append(out, paragraphs(strings.Join(para, "\n"), 0)...)
		para = nil
	}
	fence := false
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if m := mdHeading.FindStringSubmatch(line); m != nil && !fence {
			flush()
			out = append(out, block{level: len(m[1]), text: m[2]})
			continue
		}
		para = append(para, line)
	}
	flush()
	return out
}

var (
	htmlDrop    = regexp.MustCompile(`(?is)<(script|style|head|noscript)\b.*?</(script|style|head|noscript)>`)
	htmlHeading = regexp.MustCompile(`(?is)<h([1-6])\b[^>]*>(.*?)</h[1-6]>`)
	htmlBreak   = regexp.MustCompile(`(?i)</?(p|div|li|ul|ol|br|tr|table|section|article|blockquote|pre)\b[^>]*>`)
	htmlTag     = regexp.MustCompile(`(?s)<[^>]*>`)
)

func extractHTML(doc string) []block {
	doc = htmlDrop.ReplaceAllString(doc, " ")
	doc = htmlHeading.ReplaceAllString(doc, "\n\n\x00$1$2\n\n")
	doc = htmlBreak.ReplaceAllString(doc, "\n\n")
	doc = htmlTag.ReplaceAllString(doc, " ")
	var out []block
	for _, b := range paragraphs(doc, 0) {
		if strings.HasPrefix(b.text, "\x00") && len(b.text) > 2 {
			b.level, b.text = int(b.text[1]-'0'), strings.TrimSpace(b.text[2:])
		}
		b.text = html.UnescapeString(b.text)
		out = append(out, b)
	}
	return out
}

func extractPDF(data []byte) (blocks []block, err error) {
	defer func() { // the library panics on some malformed files
		if r := recover(); r != nil {
			blocks, err = nil, fmt.Errorf("unreadable PDF: %v", r)
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("unreadable PDF: %w", err)
	}
	for i := 1; i <= r.NumPage(); i++ {
		p := r.Page(i)
		if p.V.IsNull() {
			continue
		}
		text, err := p.GetPlainText(nil)
		if err != nil {
			return nil, fmt.Errorf("unreadable PDF page %d: %w", i, err)
		}
		blocks = append(blocks, paragraphs(text, i)...)
	}
	return blocks, nil
}

// maxPassage bounds a passage's length in characters; longer paragraphs
// are cut at sentence ends.
const maxPassage = 1000

// chunk turns blocks into passages, each with the headings above it as
// its breadcrumb (" > ").
func chunk(blocks []block) []passageText {
	var out []passageText
	var crumbs [7]string
	for _, b := range blocks {
		if b.level > 0 {
			crumbs[b.level] = b.text
			for l := b.level + 1; l < len(crumbs); l++ {
				crumbs[l] = ""
			}
			sub := "subtitle"
			if b.level == 1 {
				sub = "title"
			}
			out = append(out, passageText{text: b.text, subtype: sub, breadcrumb: breadcrumb(crumbs[:b.level+1]), page: b.page})
			continue
		}
		bc := breadcrumb(crumbs[:])
		for _, piece := range split(b.text, maxPassage) {
			out = append(out, passageText{text: piece, subtype: "paragraph", breadcrumb: bc, page: b.page})
		}
	}
	return out
}

type passageText struct {
	text, subtype, breadcrumb string
	page                      int
}

func breadcrumb(levels []string) string {
	var parts []string
	for _, l := range levels {
		if l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " > ")
}

var sentenceEnd = regexp.MustCompile(`[.!?]\s+`)

func split(text string, max int) []string {
	if len(text) <= max {
		return []string{text}
	}
	var out []string
	cur := ""
	for _, s := range splitAfter(text) {
		if cur != "" && len(cur)+len(s) > max {
			out = append(out, strings.TrimSpace(cur))
			cur = ""
		}
		for len(s) > max { // one very long sentence
			cut := strings.LastIndex(s[:max], " ")
			if cut <= 0 {
				cut = max
			}
			out = append(out, strings.TrimSpace(s[:cut]))
			s = s[cut:]
		}
		cur += s
	}
	if strings.TrimSpace(cur) != "" {
		out = append(out, strings.TrimSpace(cur))
	}
	return out
}

func splitAfter(text string) []string {
	var out []string
	last := 0
	for _, m := range sentenceEnd.FindAllStringIndex(text, -1) {
		out = append(out, text[last:m[1]])
		last = m[1]
	}
	return append(out, text[last:])
}
