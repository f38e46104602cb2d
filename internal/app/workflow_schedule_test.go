package app_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// cronBot records the scheduled time of every firing of its per-second
// schedule trigger in a bot variable.
const cronBot = `{"workflows":{
	"main":{"nodes":{"s":{"type":"start","cards":[{"type":"message","payload":"hi"}]}}},
	"tick":{"nodes":{"t":{"type":"start","cards":[{"type":"code",
		"code":"bot.fires = (bot.fires || []).concat([event.payload.scheduledAt])"}]}}}},
	"triggers":[{"type":"schedule","cron":"* * * * * *","workflow":"tick"}]}`

// TestScheduleFiresEachTimeOnceAcrossRestarts stops the only node while a
// per-second schedule trigger fires, keeps it down for a few scheduled
// times, and starts it again on the same database: the missed times fire
// late, each once, and no time fires twice (the trigger's fired-up-to time
// is stored with each firing's effects).
func TestScheduleFiresEachTimeOnceAcrossRestarts(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a, err := app.Start(context.Background(), cfg(), testapp.Logger(t))
		if err != nil {
			t.Fatal(err)
		}
		id, _ := workflowBot(t, a, json.RawMessage(cronBot))
		fires := func(st store.Store) []time.Time {
			t.Helper()
			raw, err := st.States().Get(context.Background(), id, store.ScopeBot, id)
			if err != nil {
				t.Fatal(err)
			}
			var v struct{ Fires []string }
			if raw != nil {
				if err := json.Unmarshal(raw, &v); err != nil {
					t.Fatal(err)
				}
			}
			var out []time.Time
			for _, f := range v.Fires {
				at, err := time.Parse(time.RFC3339Nano, f)
				if err != nil {
					t.Fatalf("scheduledAt %q: %v", f, err)
				}
				out = append(out, at)
			}
			return out
		}
		waitFires := func(st store.Store, until time.Time) []time.Time {
			t.Helper()
			deadline := time.Now().Add(20 * time.Second)
			for {
				got := fires(st)
				if len(got) > 0 && !got[len(got)-1].Before(until) {
					return got
				}
				if time.Now().After(deadline) {
					t.Fatalf("fired %v, want up to %v", got, until)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		waitFires(a.Store(), time.Now().Add(time.Second))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = a.Shutdown(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		stopped := time.Now()
		time.Sleep(3 * time.Second)
		b := testapp.Start(t, cfg())
		got := waitFires(b.Store(), time.Now().Add(time.Second))
		for i := 1; i < len(got); i++ {
			if d := got[i].Sub(got[i-1]); d != time.Second {
				t.Fatalf("firing %d is %v after the previous one, want 1s (each second once): %v", i, d, got)
			}
		}
		missed := 0
		for _, at := range got {
			if at.After(stopped.Add(time.Second)) && at.Before(stopped.Add(3*time.Second)) {
				missed++
			}
		}
		if missed < 1 {
			t.Fatalf("no time of the downtime after %v fired: %v", stopped, got)
		}
		t.Logf("%d firings, %d of them due while no node ran, each second once", len(got), missed)
	})
}
