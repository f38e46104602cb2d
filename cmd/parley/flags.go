package main

import (
	"errors"
	"flag"
)

// parseFlags parses flags anywhere among the arguments ("bot deploy DIR
// --url X" as well as "bot deploy --url X DIR") and returns the positional
// arguments in order. After "--" everything is positional. A flag error
// (already explained on the flag set's output) is a *flagError; -h and
// --help give flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &flagError{err}
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
