package workflow

import (
	"math"
	"slices"
	"strings"
	"unicode"
)

// Intent matching is deterministic: no model. An intent's confidence for a
// message is 1 when the message contains one of its keywords (as whole
// words) or equals one of its utterances (ignoring case and punctuation);
// otherwise it is the best BM25 score of the message against the intent's
// utterances, divided by the score the utterance gets against itself, and
// capped at 1. The best intent wins if its confidence reaches the
// threshold; ties go to the intent name that sorts first.

const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

type utterance struct {
	intent string
	terms  map[string]int
	length int
	self   float64
	norm   string
}

type intentIndex struct {
	names    []string
	keywords map[string][][]string // intent → keyword token sequences
	docs     []*utterance
	df       map[string]int
	avgLen   float64
}

// Match is an intent recognized in a message.
type Match struct {
	Intent     string
	Confidence float64
}

func tokenize(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func newIntentIndex(intents map[string]*Intent) *intentIndex {
	ix := &intentIndex{keywords: map[string][][]string{}, df: map[string]int{}}
	total := 0
	for _, name := range sortedKeys(intents) {
		in := intents[name]
		ix.names = append(ix.names, name)
		for _, k := range in.Keywords {
			if toks := tokenize(k); len(toks) > 0 {
				ix.keywords[name] = append(ix.keywords[name], toks)
			}
		}
		for _, u := range in.Utterances {
			toks := tokenize(u)
			if len(toks) == 0 {
				continue
			}
			d := &utterance{intent: name, terms: map[string]int{}, length: len(toks), norm: strings.Join(toks, " ")}
			for _, t := range toks {
				d.terms[t]++
			}
			for t := range d.terms {
				ix.df[t]++
			}
			total += len(toks)
			ix.docs = append(ix.docs, d)
		}
	}
	if len(ix.docs) > 0 {
		ix.avgLen = float64(total) / float64(len(ix.docs))
	}
	for _, d := range ix.docs {
		d.self = ix.score(d.terms, d)
	}
	return ix
}

func (ix *intentIndex) idf(t string) float64 {
	n := float64(len(ix.docs))
	df := float64(ix.df[t])
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}

// score is BM25 of query terms (with multiplicity ignored) against d.
func (ix *intentIndex) score(query map[string]int, d *utterance) float64 {
	var s float64
	for t := range query {
		f := float64(d.terms[t])
		if f == 0 {
			continue
		}
		s += ix.idf(t) * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(d.length)/ix.avgLen))
	}
	return s
}

// Classify returns every intent with a positive confidence, best first.
func (ix *intentIndex) Classify(text string) []Match {
	toks := tokenize(text)
	if len(toks) == 0 || ix == nil {
		return nil
	}
	norm := strings.Join(toks, " ")
	q := map[string]int{}
	for _, t := range toks {
		q[t]++
	}
	best := map[string]float64{}
	for _, name := range ix.names {
		for _, kw := range ix.keywords[name] {
			if containsSeq(toks, kw) {
				best[name] = 1
			}
		}
	}
	for _, d := range ix.docs {
		var c float64
		if d.norm == norm {
			c = 1
		} else if d.self > 0 {
			c = min(1, ix.score(q, d)/d.self)
		}
		if c > best[d.intent] {
			best[d.intent] = c
		}
	}
	var out []Match
	for _, name := range ix.names {
		if c := best[name]; c > 0 {
			out = append(out, Match{Intent: name, Confidence: math.Round(c*1e6) / 1e6})
		}
	}
	slices.SortStableFunc(out, func(a, b Match) int {
		switch {
		case a.Confidence > b.Confidence:
			return -1
		case a.Confidence < b.Confidence:
			return 1
		}
		return strings.Compare(a.Intent, b.Intent)
	})
	return out
}

func containsSeq(toks, seq []string) bool {
	for i := 0; i+len(seq) <= len(toks); i++ {
		if slices.Equal(toks[i:i+len(seq)], seq) {
			return true
		}
	}
	return false
}
