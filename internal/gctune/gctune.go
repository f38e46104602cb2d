// Package gctune gives the Go garbage collector a fixed headroom of memory
// above the live heap while that heap is small.
//
// With Go's default (GOGC=100) a collection starts when the heap has grown
// by as much as was live after the last one. A Parley server's live heap is
// small (tens of megabytes) and its garbage comes fast (tens of kilobytes
// per chat message), so it collects often: about a fifth of its CPU under
// load was the collector. A headroom of H lets the heap grow by at least H
// between collections (GOGC = H / live, never below 100), so a small heap
// collects less often for a bounded cost in memory, and a large one (many
// idle SSE listeners) keeps Go's default, growing by its own size.
package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// maxPercent caps GOGC for a nearly empty heap: beyond it, the heap target
// would be the headroom alone, and a tiny heap gains nothing from it.
const maxPercent = 1000

// Percent is the GOGC that lets a heap of live bytes grow by headroom
// bytes before the next collection, and never by less than its own size.
func Percent(live, headroom uint64) int {
	if live == 0 {
		return maxPercent
	}
	p := headroom * 100 / live
	switch {
	case p < 100:
		return 100
	case p > maxPercent:
		return maxPercent
	}
	return int(p)
}

// StartUnlessSet is Start(headroomMiB MiB) unless the operator set GOGC
// (which the runtime read, and which wins).
func StartUnlessSet(headroomMiB int) (stop func()) {
	if os.Getenv("GOGC") != "" || headroomMiB <= 0 {
		return func() {}
	}
	return Start(uint64(headroomMiB) << 20)
}

// Start sets GOGC after every collection from the live heap (Percent) until
// the returned stop is called. A headroom of 0 does nothing.
func Start(headroom uint64) (stop func()) {
	if headroom == 0 {
		return func() {}
	}
	t := &tuner{headroom: headroom, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	orig := Current()
	t.tune()
	t.arm()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !t.stopped {
			t.stopped = true
			debug.SetGCPercent(orig)
		}
	}
}

// Current is the GOGC in effect (-1: off).
func Current() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 100
	}
	return int(int64(s[0].Value.Uint64()))
}

type tuner struct {
	headroom uint64
	sample   []metrics.Sample

	mu      sync.Mutex // a stop does not race a finalizer's tune
	stopped bool
}

// arm sets a finalizer on a fresh object: it runs after the next
// collection that finds the object unreachable, that is once per cycle.
func (t *tuner) arm() {
	s := new([16]byte) // not tiny-allocated, so collected on its own
	runtime.SetFinalizer(s, func(*[16]byte) {
		if t.tune() {
			t.arm()
		}
	})
}

// tune sets GOGC from the live heap; false once stopped.
func (t *tuner) tune() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		if p := Percent(t.sample[0].Value.Uint64(), t.headroom); p != Current() {
			debug.SetGCPercent(p)
		}
	}
	return true
}
