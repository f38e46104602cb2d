// Package runtime runs code-first bots: JavaScript in sandboxed goja
// runtimes. It builds the bot-side event object, runs hooks, handlers and
// actions within a time budget, and reports what the turn produced (states,
// logs, a Problem) for package turns to persist. It reaches the outside world
// only through the Host interface, which package turns implements.
//
// One Engine serves every bot. Compiled programs are cached per version and
// runtimes are pooled per (bot, version): a runtime is never shared between
// bots or versions, so bots never see each other's globals.
package runtime

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"

	"github.com/parley-bots/parley/internal/model"
)

// Options tunes an Engine; zero fields take the defaults in brackets.
type Options struct {
	DefaultTimeout    time.Duration // time budget of a turn [5s]
	MaxTimeout        time.Duration // the highest per-bot budget accepted [60s]
	InitTimeout       time.Duration // budget of the code's top level, run once per runtime [1s]
	MaxVersions       int           // compiled versions and runtime pools kept [256]
	MaxIdlePerVersion int           // idle runtimes kept per (bot, version) [GOMAXPROCS, at most 8]
	MaxPayloadBytes   int           // JSON size of one outgoing payload, metadata or event [1 MB, the Runtime interface limit]
	MaxStateBytes     int           // JSON size of each state object [64 KB]
	MaxLogLines       int           // log lines kept per turn [100]
	MaxLogLineBytes   int           // bytes of one log line [4 KB]
	MaxHostCalls      int           // client.* calls per turn [1000]
	MaxCallStackSize  int           // JS call depth [1024]
	MaxStringLength   int           // characters of a string one built-in call produces (repeat, pad, join, concat, JSON.stringify) [16 Mi]
	MaxArrayLength    int           // elements of an array one built-in call creates or loops over [4 Mi: 64 MiB of values]
	// MaxHeapBytes is the Go live heap (runtime/metrics /gc/heap/live:bytes)
	// above which the memory watchdog interrupts the oldest running turn of
	// this engine [1 GiB]; negative disables the watchdog.
	MaxHeapBytes int64
}

func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defd(&o.DefaultTimeout, 5*time.Second)
	defd(&o.MaxTimeout, 60*time.Second)
	defd(&o.InitTimeout, time.Second)
	def(&o.MaxVersions, 256)
	def(&o.MaxIdlePerVersion, min(runtime.GOMAXPROCS(0), 8))
	def(&o.MaxPayloadBytes, 1<<20)
	def(&o.MaxStateBytes, 64<<10)
	def(&o.MaxLogLines, 100)
	def(&o.MaxLogLineBytes, 4<<10)
	def(&o.MaxHostCalls, 1000)
	def(&o.MaxCallStackSize, 1024)
	def(&o.MaxStringLength, 16<<20)
	def(&o.MaxArrayLength, 4<<20)
	if o.MaxHeapBytes == 0 {
		o.MaxHeapBytes = 1 << 30
	}
	return o
}

// Engine compiles and runs bot code. It is safe for concurrent use.
type Engine struct {
	opts Options

	mu       sync.Mutex
	programs *lru[string, *program] // by version id
	pools    *lru[poolKey, *pool]

	watch   watchdog
	workers workers
}

type program struct {
	code string
	prog *goja.Program
}

type poolKey struct{ bot, version string }

// pool holds idle runtimes of one bot version.
type pool struct {
	prog *program
	idle chan *instance
}

// New returns an Engine.
func New(opts Options) *Engine {
	o := opts.withDefaults()
	e := &Engine{opts: o, programs: newLRU[string, *program](o.MaxVersions), pools: newLRU[poolKey, *pool](o.MaxVersions)}
	e.watch.limit = o.MaxHeapBytes
	e.workers.idle = make(chan *worker, 4*runtime.GOMAXPROCS(0))
	return e
}

// Close stops the engine's idle worker goroutines. Turns may still be run
// afterwards; they start fresh goroutines.
func (e *Engine) Close() {
	for {
		select {
		case w := <-e.workers.idle:
			close(w.jobs)
		default:
			return
		}
	}
}

// workers keeps goroutines that ran turns: a fresh goroutine would grow its
// stack to goja's depth on every turn, which costs more than the turn.
type workers struct{ idle chan *worker }

type worker struct{ jobs chan func() }

func (ws *workers) run(f func()) {
	select {
	case w := <-ws.idle:
		w.jobs <- f
	default:
		w := &worker{jobs: make(chan func(), 1)}
		w.jobs <- f
		go w.loop(ws)
	}
}

func (w *worker) loop(ws *workers) {
	for f := range w.jobs {
		f()
		select {
		case ws.idle <- w:
		default:
			return // enough idle workers
		}
	}
}

// Compile checks code and caches its program for versionID. The code must
// parse and its top level (which registers handlers) must run without error
// within the init budget, in a throw-away runtime. A failure is an
// InvalidPayload *model.Error whose message names the line and column,
// also given as Metadata "line" and "column".
func (e *Engine) Compile(versionID, code string) error {
	p, err := e.program(versionID, code)
	if err != nil {
		return err
	}
	// The checked runtime is dropped: pools are per bot, and Compile does not
	// know the bot.
	_, err = e.newInstance(p)
	return err
}

// program returns the cached program of a version, compiling it if needed.
func (e *Engine) program(versionID, code string) (*program, error) {
	e.mu.Lock()
	p, ok := e.programs.get(versionID)
	e.mu.Unlock()
	if ok && p.code == code {
		return p, nil
	}
	// Parse separately: goja.Compile drops the position of parse errors.
	ast, err := parser.ParseFile(nil, "bot.js", code, 0)
	if err != nil {
		return nil, syntaxError(err)
	}
	prog, err := goja.CompileAST(ast, false)
	if err != nil {
		return nil, syntaxError(err)
	}
	p = &program{code: code, prog: prog}
	e.mu.Lock()
	e.programs.put(versionID, p)
	e.mu.Unlock()
	return p, nil
}

// getPool returns the runtime pool of a bot version.
func (e *Engine) getPool(botID, versionID, code string) (*pool, error) {
	k := poolKey{botID, versionID}
	e.mu.Lock()
	pl, ok := e.pools.get(k)
	e.mu.Unlock()
	if ok && pl.prog.code == code {
		return pl, nil
	}
	p, err := e.program(versionID, code)
	if err != nil {
		return nil, err
	}
	pl = &pool{prog: p, idle: make(chan *instance, e.opts.MaxIdlePerVersion)}
	e.mu.Lock()
	e.pools.put(k, pl)
	e.mu.Unlock()
	return pl, nil
}

func (pl *pool) get(e *Engine) (*instance, error) {
	select {
	case in := <-pl.idle:
		return in, nil
	default:
		return e.newInstance(pl.prog)
	}
}

func (pl *pool) put(in *instance) {
	select {
	case pl.idle <- in:
	default: // pool full: let the GC have it
	}
}

// interruption is the value given to goja's Interrupt: why the turn ended.
type interruption struct {
	problem *Problem
	err     error
	where   bool // the description gets the position in the bot's code
}

var (
	errDeadline = &interruption{problem: &Problem{Code: ProblemTimeout, Title: "Execution time limit exceeded"}}
	errMemory   = &interruption{problem: &Problem{Code: ProblemMemory, Title: "Memory limit exceeded",
		Description: "the server's heap passed its limit while this turn was the oldest one running; it was stopped"}, where: true}
)

// stuckGrace is how long RunTurn waits, after the budget, for a turn stuck
// in a built-in call (which interrupts cannot stop) before abandoning it.
const stuckGrace = 50 * time.Millisecond

// RunTurn runs one turn to completion and never panics: failures of bot
// code are reported in TurnResult.Problem, failures of the caller's context
// or the Host in TurnResult.Err. It returns within the time budget plus
// about 50 ms whatever the code does.
func (e *Engine) RunTurn(ctx context.Context, in TurnInput) TurnResult {
	res, _ := e.run(ctx, in, nil, nil)
	return res
}

// run runs one turn. prepare, when set, configures the runtime before the
// turn starts; finish, when set, runs on the turn's goroutine after the
// turn, or at once when the turn cannot start. ran is false when the turn
// did not start or was abandoned.
func (e *Engine) run(ctx context.Context, in TurnInput, prepare func(*instance), finish func()) (_ TurnResult, ran bool) {
	start := time.Now()
	// One allocation for the turn, its input and its result.
	t := &turn{e: e, input: in, parent: ctx}
	t.in, t.res = &t.input, &t.result
	res := t.res

	pl, err := e.getPool(in.BotID, in.VersionID, in.Code)
	if err == nil {
		t.inst, err = pl.get(e)
	}
	if err != nil {
		if finish != nil {
			finish()
		}
		t.fail(&Problem{Code: ProblemCompile, Title: "The bot code does not compile", Description: err.Error()})
		res.Duration = time.Since(start)
		return *res, false
	}
	if prepare != nil {
		prepare(t.inst)
	}

	budget := e.budget(in.Timeout)
	tctx, cancel := context.WithTimeout(ctx, budget)
	t.ctx = tctx
	vm := t.inst.vm
	stop := context.AfterFunc(tctx, func() {
		if ctx.Err() != nil {
			vm.Interrupt(&interruption{err: ctx.Err()})
		} else {
			vm.Interrupt(errDeadline)
		}
	})
	e.watch.add(t)

	// The turn runs on its own goroutine so that a built-in call that
	// ignores interrupts delays only that goroutine, not the caller.
	done := make(chan struct{})
	e.workers.run(func() {
		t.execute(pl, stop, cancel, done)
		if finish != nil {
			finish()
		}
	})
	select {
	case <-done:
	case <-tctx.Done():
		// The turn closes done before it cancels tctx itself (execute):
		// look before arming a timer.
		select {
		case <-done:
			res.Duration = time.Since(start)
			return *res, true
		default:
		}
		grace := time.NewTimer(stuckGrace)
		defer grace.Stop()
		select {
		case <-done:
		case <-grace.C:
			t.abandoned.Store(true)
			// The stuck goroutine still owns t.res: answer with a new one.
			r := TurnResult{}
			rt := &turn{e: e, in: t.in, res: &r}
			if ctx.Err() != nil {
				r.Err = ctx.Err()
			} else {
				rt.fail(&Problem{Code: ProblemTimeout, Title: errDeadline.problem.Title,
					Description: fmt.Sprintf("the turn ran longer than its budget of %s inside a built-in call that cannot be interrupted; it was abandoned", budget)})
			}
			r.Duration = time.Since(start)
			return r, false
		}
	}
	res.Duration = time.Since(start)
	return *res, true
}

func (e *Engine) budget(d time.Duration) time.Duration {
	if d <= 0 {
		d = e.opts.DefaultTimeout
	}
	return min(d, e.opts.MaxTimeout)
}

// execute runs the turn and returns the runtime to its pool when it is
// certainly clean: no error, no interrupt pending or delivered.
//
// It closes done before it releases the turn's context (cancel): run takes
// tctx done without done for a turn past its budget, so a goroutine paused
// between the two (a loaded scheduler, a GC) would otherwise have a turn
// that ran well within its budget abandoned as "Execution time limit
// exceeded", its replies kept and the fallback message sent after them.
func (t *turn) execute(pl *pool, stop func() bool, cancel context.CancelFunc, done chan struct{}) {
	reuse := false
	defer cancel()
	defer func() {
		close(done)
		if h := testHookTurnEnd.Load(); h != nil {
			(*h)()
		}
	}()
	defer func() {
		if x := recover(); x != nil {
			// A bug of ours must not take the server down with it.
			t.fail(&Problem{Code: ProblemInternal, Title: "Internal error", Description: fmt.Sprint(x)})
			t.res.Err = fmt.Errorf("runtime: panic: %v", x)
			reuse = false
		}
		killed := t.e.watch.remove(t)
		if !stop() || killed || t.abandoned.Load() {
			reuse = false // an interrupt may still land on this runtime
		}
		// After stop: the runtime may go back to the pool before cancel,
		// which can no longer interrupt it.
		t.inst.t = nil
		if reuse {
			pl.put(t.inst)
		}
	}()
	reuse = t.run()
}

// testHookTurnEnd, set by tests, runs on a turn's goroutine between the two
// signals of the turn's end (done closed, context released), where a
// loaded scheduler may pause it.
var testHookTurnEnd atomic.Pointer[func()]

// syntaxError turns a goja compile error into a 400 with line and column.
func syntaxError(err error) error {
	var se *goja.CompilerSyntaxError
	if errors.As(err, &se) && se.File != nil {
		pos := se.File.Position(se.Offset)
		return codeError("SyntaxError: "+se.Message, pos.Line, pos.Column)
	}
	var el parser.ErrorList
	if errors.As(err, &el) && len(el) > 0 {
		msg := el[0].Message
		if len(el) > 1 {
			msg += fmt.Sprintf(" (and %d more errors)", len(el)-1)
		}
		return codeError("SyntaxError: "+msg, el[0].Position.Line, el[0].Position.Column)
	}
	var pe *parser.Error
	if errors.As(err, &pe) {
		return codeError(pe.Message, pe.Position.Line, pe.Position.Column)
	}
	return codeError(err.Error(), 0, 0)
}

func codeError(msg string, line, col int) error {
	if line == 0 {
		return &model.Error{Type: model.ErrInvalidPayload, Message: "code: " + msg}
	}
	return &model.Error{
		Type:     model.ErrInvalidPayload,
		Message:  fmt.Sprintf("code: %s at line %d column %d", msg, line, col),
		Metadata: map[string]any{"line": line, "column": col},
	}
}

// lru is a small bounded map with least-recently-used eviction; callers
// hold Engine.mu.
type lru[K comparable, V any] struct {
	max   int
	ll    *list.List
	items map[K]*list.Element
}

type lruItem[K comparable, V any] struct {
	k K
	v V
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, ll: list.New(), items: map[K]*list.Element{}}
}

func (l *lru[K, V]) get(k K) (V, bool) {
	if el, ok := l.items[k]; ok {
		l.ll.MoveToFront(el)
		return el.Value.(*lruItem[K, V]).v, true
	}
	var zero V
	return zero, false
}

func (l *lru[K, V]) put(k K, v V) {
	if el, ok := l.items[k]; ok {
		el.Value.(*lruItem[K, V]).v = v
		l.ll.MoveToFront(el)
		return
	}
	l.items[k] = l.ll.PushFront(&lruItem[K, V]{k, v})
	if l.ll.Len() > l.max {
		old := l.ll.Back()
		l.ll.Remove(old)
		delete(l.items, old.Value.(*lruItem[K, V]).k)
	}
}
