package realtime

import (
	"math"
	"time"
)

// The parked streams' heartbeats and keepalives are due at times that each
// write moves on. The ticker used to walk every parked stream at every
// tick (5 times a second with the default heartbeat): with 10,000 idle
// listeners, 50,000 visits a second, each a cache miss or two. Instead,
// each stream waits in the slot of a timing wheel for the tick of the
// earliest time it could be due; a write does not touch the wheel. When
// its slot comes, a stream that wrote since (its due time moved on) goes
// into the slot of its new due time, and one that is due is scheduled.
// So an idle stream is visited about once per heartbeat, and a busy one
// no more often.

// wheel holds the parked streams by the tick at which they are looked at
// (guarded by parking.mu).
type wheel struct {
	period time.Duration
	slots  map[int64][]*parked // by tick number: unix ns / period
	next   int64               // the first tick not looked at yet
}

func newWheel(period time.Duration) wheel {
	return wheel{period: period, slots: map[int64][]*parked{}, next: time.Now().UnixNano() / int64(period)}
}

// add puts p in the slot of the first tick at or after unix ns at, and
// never in one already looked at.
func (w *wheel) add(p *parked, at int64) {
	per := int64(w.period)
	slot := max((at+per-1)/per, w.next)
	w.slots[slot] = append(w.slots[slot], p)
}

// take removes and returns the streams of every slot up to unix ns now,
// into buf.
func (w *wheel) take(now int64, buf []*parked) []*parked {
	last := now / int64(w.period)
	if last-w.next > int64(len(w.slots)) {
		// Many ticks passed (the ticker had stopped): fewer slots than
		// ticks to look at.
		for slot, s := range w.slots {
			if slot <= last {
				buf = append(buf, s...)
				delete(w.slots, slot)
			}
		}
	} else {
		for ; w.next <= last; w.next++ {
			if s, ok := w.slots[w.next]; ok {
				buf = append(buf, s...)
				delete(w.slots, w.next)
			}
		}
	}
	w.next = max(w.next, last+1)
	return buf
}

// tickPeriod is the ticker's period: short enough to spread the
// heartbeats of streams opened together and to write each in time.
func (o Options) tickPeriod() time.Duration {
	period := o.Keepalive / 8
	if o.Heartbeat > 0 {
		period = min(period, o.Heartbeat/20)
	}
	return max(period, 5*time.Millisecond)
}

// beatAfter is how long a parked stream may go without a write before its
// heartbeat is due: a tick early, so that the tick at which it is looked
// at and the worker that writes it still fall within Heartbeat.
func (o Options) beatAfter() time.Duration {
	return max(o.Heartbeat/2, o.Heartbeat-2*o.tickPeriod())
}

// beatAt is when p's heartbeat is due, in unix ns (never without
// heartbeats).
func (p *parked) beatAt(o Options) int64 {
	if o.Heartbeat <= 0 {
		return math.MaxInt64
	}
	return p.sink.lastWrite.Load() + int64(o.beatAfter())
}

// due is when p's heartbeat or keepalive is next due, in unix ns.
func (p *parked) due(o Options) int64 {
	return min(p.keepAt.Load(), p.beatAt(o))
}
