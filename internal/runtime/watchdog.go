package runtime

import (
	"runtime/metrics"
	"sync"
	"time"
)

// watchdog is the memory guard. goja cannot bound a runtime's memory, and Go
// cannot attribute heap to a goroutine, so it watches the process's live
// heap while turns run; above the limit it interrupts the oldest running turn
// of its engine (a runaway allocation grows with time, so it is usually the
// oldest), then waits for two GC cycles to see the effect before acting again.
type watchdog struct {
	limit int64 // < 0: disabled

	mu        sync.Mutex
	active    map[*turn]struct{}
	running   bool
	waitCycle uint64 // no new kill before this GC cycle count
}

const watchInterval = 25 * time.Millisecond

func (w *watchdog) add(t *turn) {
	if w.limit < 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t.started = time.Now()
	if w.active == nil {
		w.active = map[*turn]struct{}{}
	}
	w.active[t] = struct{}{}
	if !w.running {
		w.running = true
		go w.loop()
	}
}

// remove unregisters t and reports whether the watchdog interrupted it.
func (w *watchdog) remove(t *turn) bool {
	if w.limit < 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.active, t)
	return t.killed
}

func (w *watchdog) loop() {
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	tick := time.NewTicker(watchInterval)
	defer tick.Stop()
	for range tick.C {
		w.mu.Lock()
		if len(w.active) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		metrics.Read(samples)
		live, cycles := samples[0].Value.Uint64(), samples[1].Value.Uint64()
		if live > uint64(w.limit) && cycles >= w.waitCycle {
			var victim *turn
			for t := range w.active {
				if !t.killed && (victim == nil || t.started.Before(victim.started)) {
					victim = t
				}
			}
			if victim != nil {
				victim.killed = true
				victim.inst.vm.Interrupt(errMemory)
				w.waitCycle = cycles + 2
			}
		}
		w.mu.Unlock()
	}
}
