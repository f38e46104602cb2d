package sqlite

import (
	"database/sql/driver"
	"fmt"
	"regexp"
	"sync"

	"modernc.org/sqlite"

	"github.com/parley-bots/parley/internal/model"
)

// REGEXP for the Tables filter's $regex (X REGEXP Y calls regexp(Y, X)):
// Go's RE2 (linear time), patterns capped by model.CompileTableRegex, the
// compiled ones cached.

var (
	reMu    sync.Mutex
	reCache = map[string]*regexp.Regexp{}
)

func compiled(pattern string) (*regexp.Regexp, error) {
	reMu.Lock()
	defer reMu.Unlock()
	if re, ok := reCache[pattern]; ok {
		return re, nil
	}
	re, err := model.CompileTableRegex(pattern)
	if err != nil {
		return nil, err
	}
	if len(reCache) >= 256 {
		clear(reCache)
	}
	reCache[pattern] = re
	return re, nil
}

func init() {
	err := sqlite.RegisterDeterministicScalarFunction("regexp", 2, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		if args[0] == nil || args[1] == nil {
			return nil, nil
		}
		pattern, ok := args[0].(string)
		if !ok {
			return nil, fmt.Errorf("regexp: pattern must be text")
		}
		var s string
		switch v := args[1].(type) {
		case string:
			s = v
		case []byte:
			s = string(v)
		default:
			return nil, nil
		}
		re, err := compiled(pattern)
		if err != nil {
			return nil, err
		}
		if re.MatchString(s) {
			return int64(1), nil
		}
		return int64(0), nil
	})
	if err != nil {
		panic(err)
	}
}
