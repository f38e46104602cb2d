package runtime

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dop251/goja"
)

// allocDuring runs f and returns the bytes allocated meanwhile (TotalAlloc,
// monotonic, so not fooled by the GC).
func allocDuring(f func()) uint64 {
	var a, b goruntime.MemStats
	goruntime.ReadMemStats(&a)
	f()
	goruntime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestBuiltinOutputBounded is issue 12, finding 1: one built-in call that
// builds a huge result must end the turn at once (memory_limit), allocating
// little, however its input was made.
func TestBuiltinOutputBounded(t *testing.T) {
	def := New(Options{})
	defer def.Close()
	// The variations run with smaller limits, scaled down alike, so that
	// what goja writes before the refusal stays quick under -race.
	small := New(Options{MaxStringLength: 1 << 20, MaxArrayLength: 1 << 18})
	defer small.Close()
	const s = `const s = 'x'.repeat(1 << 19);`
	for _, tc := range []struct {
		e    *Engine
		body string
	}{
		{def, `JSON.stringify(new Array(64).fill('x'.repeat(1 << 24)))`},
		{def, `new Array(1 << 20).join('x'.repeat(1024))`},
		{def, `const s = 'x'.repeat(1 << 23); const a = []; for (let i = 0; i < 64; i++) a.push(s); a.join('')`},
		{def, `Array(1e9).fill(0)`},
		{small, s + `const a = []; for (let i = 0; i < 64; i++) a.push(s); JSON.stringify(a)`},
		{small, s + `[s, s, s, s].join('')`},
		{small, s + `String([s, s, s])`},
		{small, s + `'a'.concat(s, s, s)`},
		{small, s + `JSON.stringify(Array.from({length: 64}, () => ({toJSON: () => s})))`},
		{small, s + `JSON.stringify(Array(64).fill(0), (k, v) => k === '' ? v : s)`},
		{small, s + `JSON.stringify({get a() { return s }, get b() { return s }, get c() { return s }})`},
		{small, s + `JSON.stringify([new String(s), new String(s), new String(s)])`},
		{small, `const s = 'x'.repeat(1 << 16); let o = {}; for (let i = 0; i < 200; i++) o = {a: o, s}; JSON.stringify(o)`},
		{small, `const s = '\u0001'.repeat(1 << 18); JSON.stringify([s])`},
		{small, `JSON.stringify(Array(1 << 17).fill(7), null, 10)`},
		{small, `new Array(1 << 12).fill('x'.repeat(300)).join()`},
		{small, `const a = Array(1 << 17); [].concat(a, a, a)`},
		{small, `JSON.stringify(Array(64).fill(JSON.rawJSON ? JSON.rawJSON('"' + 'x'.repeat(1 << 16) + '"') : 'x'.repeat(1 << 16)))`},
	} {
		t.Run(tc.body, func(t *testing.T) {
			var res TurnResult
			start := time.Now()
			alloc := allocDuring(func() {
				res, _ = run(t, tc.e, `bot.on.message('*', () => { try { `+tc.body+` } catch (e) { console.log('caught ' + e) } })`, textEvent("x"))
			})
			took := time.Since(start)
			if problem(res) != ProblemMemory || !strings.Contains(res.Problem.Description, "sandbox limit") {
				t.Errorf("problem %+v logs %q", res.Problem, messages(res))
			}
			// A loose bound (the allocation bound below is the sharp one):
			// under -race on a loaded machine the refused call took 3.2 s.
			if took > 10*time.Second {
				t.Errorf("took %s", took)
			}
			if alloc > 256<<20 {
				t.Errorf("allocated %d MB", alloc>>20)
			}
			t.Logf("%s, %d MB allocated: %v", took.Round(time.Millisecond), alloc>>20, res.Problem)
		})
	}
}

// TestOtherBotsStayFast runs the JSON.stringify program of the issue next
// to another bot: the other bot's turns stay fast and the process does not
// allocate gigabytes.
func TestOtherBotsStayFast(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	hog := `bot.on.message('*', () => { JSON.stringify(new Array(64).fill('x'.repeat(1 << 24))) })`
	var wg sync.WaitGroup
	var worst time.Duration
	alloc := allocDuring(func() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				run(t, e, hog, textEvent("x"))
			}
		}()
		for range 20 {
			ev := textEvent("y")
			ev.BotID = "other"
			start := time.Now()
			res := e.RunTurn(context.Background(), TurnInput{BotID: "other", VersionID: "o", Code: `bot.on.message('*', () => console.log('ok'))`, Event: ev, Host: newFakeHost()})
			worst = max(worst, time.Since(start))
			if res.Problem != nil {
				t.Errorf("other bot: %v", res.Problem)
			}
			time.Sleep(10 * time.Millisecond)
		}
		wg.Wait()
	})
	if worst > time.Second || alloc > 512<<20 {
		t.Errorf("other bot's worst turn %s, %d MB allocated", worst, alloc>>20)
	}
	t.Logf("other bot's worst turn %s, %d MB allocated", worst, alloc>>20)
}

// TestBoundedBuiltinsKeepTheirResults checks the bounded JSON.stringify,
// join and concat against goja's own, on values they must render alike.
func TestBoundedBuiltinsKeepTheirResults(t *testing.T) {
	exprs := []string{
		`JSON.stringify({a: 1, b: 'x"y\\z\n\u0001', c: [1, 2.5, -0, NaN, Infinity, null, undefined, () => 1, true], d: {}, e: [], f: new Date(0)})`,
		`JSON.stringify({a: [1, {b: 2}], c: 'é😀\ud800'}, null, 2)`,
		`JSON.stringify({a: [1, {b: 2}], c: 'x'}, null, '--')`,
		`JSON.stringify({a: [1, {b: 2}], c: 'x'}, null, new Number(3))`,
		`JSON.stringify({b: 1, a: 2, c: {a: 3, z: 4}}, ['c', 'a', 1])`,
		`JSON.stringify({a: 1, b: [1, 2]}, function (k, v) { return typeof v === 'number' ? v * 10 + (this === undefined ? 0 : 1) : v })`,
		`JSON.stringify([new String('s'), new Number(4), new Boolean(false), Object('x')])`,
		`JSON.stringify({toJSON(k) { return {k: k, n: 1} }})`,
		`JSON.stringify('plain')`, `String(JSON.stringify(undefined))`, `String(JSON.stringify(() => 1))`, `JSON.stringify(12)`,
		`(() => { try { JSON.stringify({a: 1n}) } catch (e) { return e.name } })()`,
		`(() => { const a = [1]; a.push(a); return a.join('-') + '|' + String([1, [2, [3]], null, undefined]) })()`,
		`[1, 'b', null, undefined, {toString() { return 'o' }}].join()`,
		`[1, 2, 3].join(undefined) + [].join() + [,].join('x') + ['é😀'].join('\ud800')`,
		`'a'.concat(1, null, undefined, {toString() { return 'o' }}, 'é')`,
		`[1].concat([2], 3, [[4]]).length`,
		`String(/(a+)+b/.test('aaab')) + 'x'.replace(/x/, 'y') + 'a,b'.split(/,/).length + 'abc'.search(/c/) + 'abc'.match(/b/)[0]`,
	}
	e := New(Options{})
	defer e.Close()
	var code strings.Builder
	code.WriteString("bot.on.message('*', () => {\n")
	for _, x := range exprs {
		fmt.Fprintf(&code, "  console.log(%s)\n", x)
	}
	code.WriteString("})")
	res, _ := run(t, e, code.String(), textEvent("x"))
	if res.Problem != nil || len(res.Logs) != len(exprs) {
		t.Fatalf("problem %v logs %q", res.Problem, messages(res))
	}
	ref := goja.New()
	for i, x := range exprs {
		want, err := ref.RunString(x)
		if err != nil {
			t.Fatalf("%s: %v", x, err)
		}
		if got := res.Logs[i].Message; got != want.String() {
			t.Errorf("%s\n got %q\nwant %q", x, got, want.String())
		}
	}
}

// TestRegexpBacktrackingStopsWithTheTurn is issue 12, finding 2: a
// catastrophically backtracking pattern ends the turn, and the goroutine that
// ran it ends too instead of burning CPU after the turn was answered.
func TestRegexpBacktrackingStopsWithTheTurn(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	// Warm up: the engine's worker goroutines and the regexp clock.
	run(t, e, `bot.on.message('*', () => { /(a)(?=b)/.test('ab') })`, textEvent("x"))
	time.Sleep(50 * time.Millisecond)
	base := goruntime.NumGoroutine()
	for _, tc := range []struct {
		body    string
		budget  time.Duration
		problem string
	}{
		{`/(a+)+(?=b)/.test('a'.repeat(26) + 'c')`, 5 * time.Second, "Regular expression"},
		{`'a'.repeat(26).concat('c').match(/(a+)+(?=b)/)`, 5 * time.Second, "Regular expression"},
		{`try { /(a+)+(?=b)/.test('a'.repeat(26) + 'c') } catch (e) {}`, 5 * time.Second, "Regular expression"},
		// exec cannot be wrapped without losing goja's fast paths: the
		// turn times out, and the match stops within RegexpTimeout.
		{`/(a+)+(?=b)/.exec('a'.repeat(26) + 'c'); for (;;) {}`, 300 * time.Millisecond, "Execution time"},
		{`/(a+)+(?=b)/.exec('a'.repeat(26) + 'c')`, 300 * time.Millisecond, "Execution time"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			start := time.Now()
			res, _ := run(t, e, `bot.on.message('*', () => { `+tc.body+` })`, textEvent("x"), func(ti *TurnInput) { ti.Timeout = tc.budget })
			took := time.Since(start)
			if problem(res) != ProblemTimeout || !strings.HasPrefix(res.Problem.Title, tc.problem) {
				t.Errorf("problem %+v", res.Problem)
			}
			if took > min(tc.budget, RegexpTimeout)+time.Second {
				t.Errorf("took %s", took)
			}
			// The goroutine that ran the turn ends (or goes back to the
			// idle workers) soon after.
			deadline := time.Now().Add(RegexpTimeout + 2*time.Second)
			for goruntime.NumGoroutine() > base && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if n := goruntime.NumGoroutine(); n > base {
				t.Errorf("%d goroutines %s after the turn, %d before", n, time.Since(start)-took, base)
			}
			t.Logf("%s: %v", took.Round(time.Millisecond), res.Problem)
		})
	}
}
