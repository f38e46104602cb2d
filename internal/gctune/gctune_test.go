package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name           string
		live, headroom uint64
		want           int
	}{
		{"empty heap: the cap", 0, 64 * mib, maxPercent},
		{"tiny heap: the cap", 1 * mib, 64 * mib, maxPercent},
		{"small heap grows by the headroom", 16 * mib, 64 * mib, 400},
		{"heap of the headroom's size: Go's default", 64 * mib, 64 * mib, 100},
		{"large heap grows by its own size", 512 * mib, 64 * mib, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Percent(c.live, c.headroom); got != c.want {
				t.Fatalf("Percent(%d MiB, %d MiB) = %d, want %d", c.live/mib, c.headroom/mib, got, c.want)
			}
		})
	}
}

// TestStartFollowsCollections: Start sets GOGC at once and after each
// collection, and stop puts back the GOGC it found.
func TestStartFollowsCollections(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	if got := Start(0); got == nil || Current() != 100 {
		t.Fatalf("Start(0) changed GOGC to %d", Current())
	}

	stop := Start(1 << 40) // far above any live heap here: the cap
	if got := Current(); got != maxPercent {
		t.Fatalf("GOGC after Start = %d, want %d", got, maxPercent)
	}
	// Someone else changes it; the next collection puts the tuned value
	// back (the finalizer runs on its own goroutine soon after).
	debug.SetGCPercent(150)
	deadline := time.Now().Add(5 * time.Second)
	for Current() != maxPercent {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC still %d after collections, want %d", Current(), maxPercent)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	stop()
	if got := Current(); got != 100 {
		t.Fatalf("GOGC after stop = %d, want the 100 found at Start", got)
	}
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	if got := Current(); got != 100 {
		t.Fatalf("GOGC changed after stop: %d", got)
	}
}

// TestOperatorGOGCWins: with GOGC set, or no headroom, nothing is tuned.
func TestOperatorGOGCWins(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "100")
	stop := StartUnlessSet(1 << 20)
	got := Current()
	stop()
	if got != 100 {
		t.Fatalf("GOGC %d with GOGC set, want 100", got)
	}
	t.Setenv("GOGC", "")
	stop = StartUnlessSet(0)
	got = Current()
	stop()
	if got != 100 {
		t.Fatalf("GOGC %d with no headroom, want 100", got)
	}
	stop = StartUnlessSet(1 << 20)
	defer stop()
	if got := Current(); got != maxPercent {
		t.Fatalf("GOGC %d, want %d", got, maxPercent)
	}
}
