package realtime

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

// TestWheel: a stream added for a time is taken at the first tick at or
// after it, never before, and never at a tick already looked at; ticks the
// ticker missed are looked at all at once.
func TestWheel(t *testing.T) {
	const per = int64(10 * time.Millisecond)
	base := (time.Now().UnixNano()/per + 1) * per // a tick's start, not looked at yet
	for _, tc := range []struct {
		name string
		at   int64   // the time the stream is added for, from base
		now  []int64 // the ticks' times, from base
		want int     // index in now of the tick that takes it (-1: none)
	}{
		{"due at a tick", 2 * per, []int64{0, per, 2 * per, 3 * per}, 2},
		{"due between ticks: the next", per + 1, []int64{0, per, 2 * per, 3 * per}, 2},
		{"due in the past: the next tick", -5 * per, []int64{0, per}, 0},
		{"a late tick takes what it passed", 3 * per, []int64{0, 7 * per}, 1},
		{"ticks missed by far", 2 * per, []int64{1000 * per}, 0},
		{"not yet", 50 * per, []int64{0, per, 49 * per}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := wheel{period: time.Duration(per), slots: map[int64][]*parked{}, next: base / per}
			p := &parked{}
			w.add(p, base+tc.at)
			took := -1
			for i, now := range tc.now {
				got := w.take(base+now, nil)
				if slices.Contains(got, p) {
					if took >= 0 {
						t.Fatalf("taken twice: at ticks %d and %d", took, i)
					}
					took = i
					if base+now < base+tc.at && tc.at >= 0 {
						t.Fatalf("taken at %d, before it is due at %d", now, tc.at)
					}
				}
			}
			if took != tc.want {
				t.Fatalf("taken at tick %d, want %d", took, tc.want)
			}
		})
	}
}

// TestParkedHeartbeatSpacing: an idle parked stream gets a heartbeat about
// once per Heartbeat, not twice (each is a write to a socket, for each of
// thousands of idle listeners), and never lets Heartbeat pass by far.
func TestParkedHeartbeatSpacing(t *testing.T) {
	const hb = 200 * time.Millisecond
	log := &memLog{}
	h := NewHub(log, nil, Options{FirstFrameDelay: time.Millisecond, Heartbeat: hb, Keepalive: time.Minute})
	defer h.Close()
	s := parkedStream(t, h)
	var beats []time.Time
	_ = s.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for len(beats) < 7 {
		line, err := s.rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == ": \n" {
			beats = append(beats, time.Now())
		}
	}
	for i := 1; i < len(beats); i++ {
		// The reader's own delays blur each gap by a few milliseconds.
		if gap := beats[i].Sub(beats[i-1]); gap < 3*hb/4 || gap > 2*hb {
			t.Errorf("heartbeat %d came %v after the one before, want about %v", i, gap, hb)
		}
	}
}

// countingLog counts the signal log's reads.
type countingLog struct {
	memLog
	reads atomic.Int64
}

func (l *countingLog) SignalsAfter(ctx context.Context, bot, conv string, after int64, limit int) ([]*model.Signal, error) {
	l.reads.Add(1)
	return l.memLog.SignalsAfter(ctx, bot, conv, after, limit)
}

// quietBroker is another node's broker that never wakes this one.
type quietBroker struct{}

func (quietBroker) Announce(*model.Signal) {}
func (quietBroker) Run(ctx context.Context, _ func(string, string, int64), _ func()) error {
	<-ctx.Done()
	return nil
}

// TestKeepaliveReadsOnlyWithBroker: with other nodes (a broker), an idle
// stream's keepalive reads the log first, so a signal whose wake-up was
// lost still reaches it, and the streams of one conversation share that
// read: one that read the log to its end within half a Keepalive spares
// the others theirs. A hub without a broker is told of every commit: its
// keepalives only ping, without a read. Each parked (in a pool worker) and
// on the stream's goroutine.
func TestKeepaliveReadsOnlyWithBroker(t *testing.T) {
	const streams, keepalive = 6, 80 * time.Millisecond
	for _, tc := range []struct {
		name     string
		broker   Broker
		noHijack bool
	}{
		{"parked, one node", nil, false},
		{"goroutine, one node", nil, true},
		{"parked, several nodes", quietBroker{}, false},
		{"goroutine, several nodes", quietBroker{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &countingLog{}
			h := NewHub(log, tc.broker, Options{FirstFrameDelay: time.Millisecond, Heartbeat: -1,
				Keepalive: keepalive, NoHijack: tc.noHijack})
			ctx, stop := context.WithCancel(context.Background())
			h.Start(ctx)
			defer func() { stop(); h.Close() }()
			srv := serveHub(t, h, "u")
			cs := make([]*sseClient, streams)
			for i := range cs {
				cs[i] = openStream(t, srv.URL, "")
			}
			waitFor(t, "every stream registered", 5*time.Second, func() bool { return h.Subscribers("b", "c") == streams })
			h.Publish(log.append("b", "c", "message_created", `{"n":1}`, time.Now()))
			for _, c := range cs {
				for f := c.next(t); f[0] != "1"; f = c.next(t) {
				}
			}
			if !tc.noHijack {
				waitFor(t, "the streams parked", 5*time.Second, func() bool { return h.Parked() == streams })
			}
			// Committed, its wake-up lost.
			log.append("b", "c", "message_created", `{"n":2}`, time.Now())
			readsBefore, start := log.reads.Load(), time.Now()
			pings, got2 := 0, 0
			for _, c := range cs {
				seen := false
				for n := 0; n < 4; {
					switch f := c.next(t); {
					case f[1] == "ping":
						n++
					case f[0] == "2" && !seen:
						seen = true
						got2++
					}
				}
				pings += 4
			}
			reads, rounds := log.reads.Load()-readsBefore, time.Since(start)/keepalive+1
			if tc.broker == nil && (reads != 0 || got2 != 0) {
				t.Fatalf("one node: %d reads of the log in %d keepalives (signal 2 delivered to %d streams), want none", reads, pings, got2)
			}
			if tc.broker != nil {
				if got2 != streams {
					t.Fatalf("several nodes: the lost signal reached %d of %d streams", got2, streams)
				}
				// Each stream reads once to get signal 2, then one read in
				// each half Keepalive serves them all.
				// (One per keepalive, as before, would be streams × 4.)
				if most := int64(streams) + 2*int64(rounds); reads < 1 || reads > most {
					t.Fatalf("several nodes: %d reads of the log for %d streams' %d keepalives over %v, want 1 to %d", reads, streams, pings, time.Since(start), most)
				}
				t.Logf("%d reads for %d keepalives", reads, pings)
			}
			if !tc.noHijack && h.Parked() != streams {
				t.Fatalf("%d parked after the keepalives, want %d", h.Parked(), streams)
			}
		})
	}
}
