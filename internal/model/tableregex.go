package model

import (
	"fmt"
	"regexp/syntax"
	"strings"
	"unicode"
)

// PostgresRegex rewrites a $regex pattern (Go RE2 syntax, flags inline, as
// RegexCond.Pattern holds it) into PostgreSQL's advanced regular
// expression syntax with the same matches, so that both engines answer
// alike and PostgreSQL never refuses a pattern the parser accepted. The
// rewrite works on the parsed pattern: every character is written as a
// \uXXXX escape, groups as (?:...), case folding as bracket classes,
// multi-line anchors as lookarounds; captures and greediness are dropped
// (a filter only asks whether a row matches). A pattern PostgreSQL could
// not compile (a repetition above 255, nested repetitions past
// MaxRegexSize, a NUL character) is an error.
func PostgresRegex(pattern string) (string, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", err
	}
	if n := regexSize(re); n > MaxRegexSize {
		return "", fmt.Errorf("pattern too complex (%d states after repetition, at most %d)", n, MaxRegexSize)
	}
	var b strings.Builder
	if err := pgRegex(&b, re); err != nil {
		return "", err
	}
	if b.Len() > MaxRegexSQLLength {
		return "", fmt.Errorf("pattern too complex (its character classes are too large)")
	}
	return b.String(), nil
}

const (
	// MaxRegexSize bounds a pattern's size once its repetitions are
	// expanded (PostgreSQL refuses "too complex" expressions).
	MaxRegexSize = 2000
	// MaxRegexSQLLength bounds the rewritten pattern's length (large
	// Unicode classes expand to many ranges).
	MaxRegexSQLLength = 64 << 10
	// pgMaxRepeat is PostgreSQL's largest repetition count.
	pgMaxRepeat = 255
)

// regexSize estimates the states a pattern expands to.
func regexSize(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpConcat, syntax.OpAlternate:
		n := 0
		for _, s := range re.Sub {
			n += regexSize(s)
		}
		return n
	case syntax.OpCapture, syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return regexSize(re.Sub[0]) + 1
	case syntax.OpRepeat:
		times := re.Max
		if times < re.Min {
			times = re.Min + 1
		}
		return regexSize(re.Sub[0])*max(times, 1) + 1
	}
	return 1
}

func pgRune(b *strings.Builder, r rune) error {
	if r == 0 {
		return fmt.Errorf("the NUL character cannot be matched")
	}
	if r > 0xFFFF {
		fmt.Fprintf(b, `\U%08x`, r)
	} else {
		fmt.Fprintf(b, `\u%04x`, r)
	}
	return nil
}

func pgGroup(b *strings.Builder, re *syntax.Regexp) error {
	b.WriteString("(?:")
	if err := pgRegex(b, re); err != nil {
		return err
	}
	b.WriteString(")")
	return nil
}

func pgRegex(b *strings.Builder, re *syntax.Regexp) error {
	switch re.Op {
	case syntax.OpEmptyMatch:
		b.WriteString("(?:)")
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase == 0 {
				if err := pgRune(b, r); err != nil {
					return err
				}
				continue
			}
			b.WriteString("[")
			for f := r; ; {
				if err := pgRune(b, f); err != nil {
					return err
				}
				if f = unicode.SimpleFold(f); f == r {
					break
				}
			}
			b.WriteString("]")
		}
	case syntax.OpCharClass:
		var ranges strings.Builder
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := max(re.Rune[i], 1), re.Rune[i+1] // PostgreSQL text has no NUL
			if lo > hi {
				continue
			}
			_ = pgRune(&ranges, lo)
			if hi > lo {
				ranges.WriteString("-")
				_ = pgRune(&ranges, hi)
			}
		}
		if ranges.Len() == 0 {
			return fmt.Errorf("a character class that matches nothing")
		}
		b.WriteString("[" + ranges.String() + "]")
	case syntax.OpAnyCharNotNL:
		b.WriteString(`[^\u000a]`)
	case syntax.OpAnyChar:
		b.WriteString(".") // PostgreSQL's default: . matches a newline
	case syntax.OpBeginLine:
		b.WriteString(`(?:^|(?<=\u000a))`)
	case syntax.OpEndLine:
		b.WriteString(`(?:$|(?=\u000a))`)
	case syntax.OpBeginText:
		b.WriteString("^")
	case syntax.OpEndText:
		b.WriteString("$")
	case syntax.OpWordBoundary:
		b.WriteString(`\y`)
	case syntax.OpNoWordBoundary:
		b.WriteString(`\Y`)
	case syntax.OpCapture:
		return pgGroup(b, re.Sub[0])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		if err := pgGroup(b, re.Sub[0]); err != nil {
			return err
		}
		b.WriteString(map[syntax.Op]string{syntax.OpStar: "*", syntax.OpPlus: "+", syntax.OpQuest: "?"}[re.Op])
	case syntax.OpRepeat:
		if re.Min > pgMaxRepeat || re.Max > pgMaxRepeat {
			return fmt.Errorf("repetition count above %d", pgMaxRepeat)
		}
		if err := pgGroup(b, re.Sub[0]); err != nil {
			return err
		}
		if re.Max < 0 {
			fmt.Fprintf(b, "{%d,}", re.Min)
		} else {
			fmt.Fprintf(b, "{%d,%d}", re.Min, re.Max)
		}
	case syntax.OpConcat:
		if len(re.Sub) == 0 {
			b.WriteString("(?:)")
		}
		for _, s := range re.Sub {
			if err := pgGroup(b, s); err != nil {
				return err
			}
		}
	case syntax.OpAlternate:
		b.WriteString("(?:")
		for i, s := range re.Sub {
			if i > 0 {
				b.WriteString("|")
			}
			if err := pgRegex(b, s); err != nil {
				return err
			}
		}
		b.WriteString(")")
	default: // OpNoMatch
		return fmt.Errorf("a pattern that matches nothing")
	}
	return nil
}
