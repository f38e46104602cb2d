package turns_test

// How messages of one conversation wait for one another around a fold.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/conversations"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testdb"
	"github.com/parley-bots/parley/internal/turns"
)

// TestFoldWaitsForTheRunsLastTurn: a message that comes while its
// conversation's run ends its one pending turn (a message that did not
// fold) waits for that run, then folds: its answer is stored when
// createMessage returns. On SQLite, and on PostgreSQL under the lease
// that run took and parked.
func TestFoldWaitsForTheRunsLastTurn(t *testing.T) {
	for _, leases := range []bool{false, true} {
		name := map[bool]string{false: "sqlite", true: "postgres"}[leases]
		t.Run(name, func(t *testing.T) {
			started, release := make(chan struct{}), make(chan struct{})
			rec := &recorder{}
			bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
				if rec.add(in) == "first" {
					close(started)
					<-release
				}
				return echoText(ctx, in, out)
			})
			// "first" is stored with its turn before the dispatcher
			// starts, which finds it pending and runs it, as a message
			// that did not fold (no sweep after that: it would notify it
			// again, and the run would go on).
			o := turns.DispatcherOptions{FoldWithin: 10 * time.Second, Sweep: time.Hour}
			storeFirst := func(f *foldFixture) {
				f.storeMessage(t, "first")
			}
			f := foldOn(t, leases, bot, o, storeFirst)
			<-started
			before := f.commits.n.Load()
			done := make(chan []string)
			go func() {
				f.post(t, f.conv, "second")
				done <- f.texts(t)
			}()
			select {
			case <-done:
				close(release)
				t.Fatal("createMessage returned while the run's last turn had not ended")
			case <-time.After(100 * time.Millisecond):
			}
			close(release)
			// "second" was sent before "first" was answered: its time is
			// earlier (model.MessageTime), its signal after the answer's.
			eqStrings(t, "messages once createMessage returned", <-done, "first", "second", "echo first", "echo second")
			eqStrings(t, "signals", f.signalTexts(t), "echo first", "second", "echo second") // "first" was stored without one
			if n := f.commits.n.Load() - before; n != 2 {
				t.Fatalf("%d commits, want 2 (the first's completion, the second with its answer)", n)
			}
			eqStrings(t, "turns run", rec.turns(), "first", "second")
		})
	}
}

// gatedCommitter holds back the commit of a message write without Then
// whose signal holds text until open is closed; then, with fail set, the
// write fails with it instead of committing.
type gatedCommitter struct {
	store.Committer
	text string
	open chan struct{}
	fail error
}

func (c *gatedCommitter) Commit(ctx context.Context, w *store.Write) error {
	if w.Then == nil && w.Signal != nil && strings.Contains(string(w.Signal.Data), `"text":"`+c.text+`"`) {
		<-c.open
		if c.fail != nil {
			return c.fail
		}
	}
	return c.Committer.Commit(ctx, w)
}

// echoHolding is an echo bot whose turn for the message text waits for
// release.
func echoHolding(text string, release <-chan struct{}) turns.Bot {
	return botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
		var p struct{ Text string }
		_ = json.Unmarshal(in.Message.Payload, &p)
		if p.Text == text {
			<-release
		}
		return echoText(ctx, in, out)
	})
}

// TestFoldWaitsForAMessageBeingStored: while a message that could not
// fold is being committed on its own, its conversation is not claimed by
// the next message (which would read a last turn number about to be
// stale, and answer before the message sent earlier): that one waits for
// it, and for its turn's run, then folds.
func TestFoldWaitsForAMessageBeingStored(t *testing.T) {
	releaseA := make(chan struct{})
	bot := echoHolding("a", releaseA)
	gate := &gatedCommitter{text: "b", open: make(chan struct{})}
	// FoldWithin bounds how long c waits: longer than b is held.
	f := newFoldFixtureWith(t, turns.FoldableBot(bot), turns.DispatcherOptions{FoldWithin: time.Second}, func(c store.Committer) store.Committer {
		gate.Committer = c
		return gate
	})
	// "a" commits alone past FoldWithin; its fold holds the conversation
	// while its turn runs.
	f.post(t, f.conv, "a")
	bDone := make(chan struct{})
	go func() { f.post(t, f.conv, "b"); close(bDone) }() // commits on its own, held at the gate
	time.Sleep(100 * time.Millisecond)
	close(releaseA)
	// Once a's fold has released the conversation too: a message that
	// comes before would find a run with a turn notified, and commit alone.
	waitUntil(t, "the answer to a", func() bool {
		return len(f.signalTexts(t)) == 2 && turns.Released(f.queue, f.ref())
	})
	cDone := make(chan []string)
	go func() { f.post(t, f.conv, "c"); cDone <- f.signalTexts(t) }()
	select {
	case <-cDone:
		close(gate.open)
		t.Fatal("c was stored while b was being stored")
	case <-time.After(100 * time.Millisecond):
	}
	close(gate.open)
	<-bDone
	// c folded once b's turn ran: its answer was there when it returned.
	eqStrings(t, "signals once c was stored", <-cDone, "a", "echo a", "b", "echo b", "c", "echo c")
}

// TestFoldWaitsNotForAMessageNotStored: a Fold waiting for a message being
// committed on its own (TestFoldWaitsForAMessageBeingStored) goes on as
// soon as that commit fails, with no turn to run, instead of waiting out
// FoldWithin and then committing its message alone.
func TestFoldWaitsNotForAMessageNotStored(t *testing.T) {
	releaseA := make(chan struct{})
	bot := echoHolding("a", releaseA)
	gate := &gatedCommitter{text: "b", open: make(chan struct{}), fail: errors.New("disk full")}
	const within = 3 * time.Second
	f := newFoldFixtureWith(t, turns.FoldableBot(bot), turns.DispatcherOptions{FoldWithin: within}, func(c store.Committer) store.Committer {
		gate.Committer = c
		return gate
	})
	f.post(t, f.conv, "a") // commits alone past FoldWithin, its turn held
	bErr := make(chan error, 1)
	go func() {
		id := f.conv
		_, err := f.chat.CreateMessage(context.Background(), f.caller, conversations.MessageInput{ConversationID: &id,
			Payload: json.RawMessage(`{"type":"text","text":"b"}`)})
		bErr <- err
	}()
	time.Sleep(100 * time.Millisecond)
	close(releaseA)
	// Once a's fold has released the conversation too: a message that
	// comes before would find a run with a turn notified, and commit alone.
	waitUntil(t, "the answer to a", func() bool {
		return len(f.signalTexts(t)) == 2 && turns.Released(f.queue, f.ref())
	})
	cDone := make(chan []string)
	go func() { f.post(t, f.conv, "c"); cDone <- f.signalTexts(t) }()
	time.Sleep(100 * time.Millisecond) // c waits for b
	opened := time.Now()
	close(gate.open)
	if err := <-bErr; err == nil {
		t.Fatal("b was stored")
	}
	got := <-cDone
	if waited := time.Since(opened); waited > within/2 {
		t.Errorf("c returned %v after b's commit failed: it waited out FoldWithin", waited)
	}
	// c folded: its answer was there when it returned.
	eqStrings(t, "signals once c was stored", got, "a", "echo a", "c", "echo c")
}

// TestFoldAloneWaitsForTheFoldsMessage: a message that does not fold
// (here: a turn was notified for its conversation meanwhile) is submitted
// after the message of the Fold holding its conversation, not before it:
// it is stored after the message sent before it, and its turn is numbered
// after that one's.
func TestFoldAloneWaitsForTheFoldsMessage(t *testing.T) {
	started, releaseA := make(chan struct{}), make(chan struct{})
	bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
		if in.Message == nil {
			return nil // the event
		}
		var p struct{ Text string }
		_ = json.Unmarshal(in.Message.Payload, &p)
		if p.Text == "a" {
			select {
			case <-started:
			default:
				close(started)
			}
			<-releaseA
		}
		return echoText(ctx, in, out)
	})
	f := newFoldFixture(t, turns.FoldableBot(bot), turns.DispatcherOptions{FoldWithin: 10 * time.Second})
	aDone := make(chan struct{})
	go func() { f.post(t, f.conv, "a"); close(aDone) }()
	<-started
	// A turn of the conversation is notified while a's fold holds it.
	f.storeEvent(t)
	f.queue.Notify(f.ref())
	bDone := make(chan struct{})
	go func() { f.post(t, f.conv, "b"); close(bDone) }()
	select {
	case <-bDone:
		close(releaseA)
		t.Fatal("b was stored before a, which was sent first")
	case <-time.After(100 * time.Millisecond):
	}
	close(releaseA)
	<-aDone
	<-bDone
	waitUntil(t, "every answer", func() bool { return f.pending(t) == 0 && len(f.signalTexts(t)) == 4 })
	eqStrings(t, "signals", f.signalTexts(t), "a", "b", "echo a", "echo b")
}

// TestFoldAloneKeepsTheOrder: a turn that outlasted FoldWithin, whose
// message was therefore committed alone, completes only if no turn came
// before its message meanwhile (another node's, or another writer's, that
// the claim did not keep out); else it stays pending and runs again after
// that one. On both engines.
func TestFoldAloneKeepsTheOrder(t *testing.T) {
	foldEngines(t, func(t *testing.T, newFixture func(turns.Bot, turns.DispatcherOptions) *foldFixture) {
		rec := &recorder{}
		var f *foldFixture
		bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
			if rec.add(in) == "slow" && len(rec.turns()) == 1+f.skip/2 {
				// Another writer's turn, stored before the message: FoldWithin
				// is long enough that the message cannot have committed yet on
				// a loaded machine (a 50 ms bound once let it commit first, and
				// the test then checked nothing).
				if len(f.texts(t)) != 0 {
					t.Errorf("the message was committed before the other writer's turn: %q", f.texts(t))
				}
				f.storeEvent(t)
				// Past FoldWithin the message commits alone; this turn goes on
				// until it has, so that it completes after the event's turn.
				for deadline := time.Now().Add(10 * time.Second); len(f.texts(t)) == 0; time.Sleep(5 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Errorf("the message was not committed alone past FoldWithin")
						break
					}
				}
			}
			if in.Message == nil {
				return nil
			}
			return echoText(ctx, in, out)
		})
		f = newFixture(turns.FoldableBot(bot), turns.DispatcherOptions{FoldWithin: 500 * time.Millisecond})
		f.post(t, f.conv, "slow")
		waitUntil(t, "every turn", func() bool { return f.pending(t) == 0 && len(f.texts(t)) == 2 })
		time.Sleep(50 * time.Millisecond)
		eqStrings(t, "messages", f.texts(t), "slow", "echo slow")
		got := rec.turns()[f.skip/2:]
		eqStrings(t, "turns run", got, "slow", "event", "slow")
	})
}

// TestClaimWithinDefaults: a Fold waits for its conversation's last run
// FoldWithin on one node, and at least DefaultClaimWithin with leases,
// where a run's end includes a commit's round trip.
func TestClaimWithinDefaults(t *testing.T) {
	for _, c := range []struct {
		name string
		o    turns.DispatcherOptions
		want time.Duration
	}{
		{"one node", turns.DispatcherOptions{}, turns.DefaultFoldWithin},
		{"one node, FoldWithin given", turns.DispatcherOptions{FoldWithin: 50 * time.Millisecond}, 50 * time.Millisecond},
		{"leases", turns.DispatcherOptions{Leases: true}, turns.DefaultClaimWithin},
		{"leases, a longer FoldWithin", turns.DispatcherOptions{Leases: true, FoldWithin: 50 * time.Millisecond}, 50 * time.Millisecond},
		{"given", turns.DispatcherOptions{Leases: true, ClaimWithin: time.Second}, time.Second},
	} {
		d := turns.NewDispatcher(nil, nil, turns.NewQueue(), nil, nil, c.o)
		if got := turns.ClaimWithin(d); got != c.want {
			t.Errorf("%s: ClaimWithin %v, want %v", c.name, got, c.want)
		}
	}
}

// TestFoldWaitsForTheRunWithinClaimWithin: a message that comes while its
// conversation's run has one turn left waits for that run at most
// ClaimWithin, not FoldWithin: within it, the message folds once the run
// ends; past it, it commits alone.
func TestFoldWaitsForTheRunWithinClaimWithin(t *testing.T) {
	const held = time.Second // the run's turn, far longer than FoldWithin
	for _, c := range []struct {
		name        string
		claimWithin time.Duration
		want        string
	}{
		{"the run ends within ClaimWithin", 5 * time.Second, "folded"},
		{"the run ends past ClaimWithin", 50 * time.Millisecond, turns.AloneBusy},
	} {
		t.Run(c.name, func(t *testing.T) {
			started, release := make(chan struct{}), make(chan struct{})
			bot := turns.FoldableBot(botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
				if in.Message == nil { // the event's turn: the run's one turn left
					close(started)
					<-release
					return nil
				}
				return echoText(ctx, in, out)
			}))
			obs := &countingObserver{}
			// The event is stored with its turn before the dispatcher
			// starts, which finds it pending and runs it: notified once
			// (no sweep after that, which would notify it again and leave
			// the run with a turn more to run).
			o := turns.DispatcherOptions{FoldWithin: 50 * time.Millisecond, ClaimWithin: c.claimWithin, Observer: obs, Sweep: time.Hour}
			f := newFoldFixtureOn(t, testdb.SQLite(t), bot, o, nil, func(f *foldFixture) { f.storeEvent(t) })
			<-started
			time.AfterFunc(held, func() { close(release) })
			f.post(t, f.conv, "m")
			eqStrings(t, "how the message committed", obs.storedSince(0), c.want)
			if c.want == "folded" {
				// Its answer was stored with it.
				eqStrings(t, "messages once createMessage returned", f.texts(t), "m", "echo m")
			}
		})
	}
}

// TestFoldWaitsForARunThatReadItsNotifiedTurn: a message committed alone
// while its conversation's run ran (its turn notified then) is read by
// that run, which runs its turn; the conversation's next message, sent
// while that turn runs, waits for the run's end and folds. It used to
// find the conversation still notified, commit alone, and leave the next
// one the same way: a chain that kept a share of PostgreSQL's closed-loop
// messages out of the fold. On SQLite, and on PostgreSQL with leases.
func TestFoldWaitsForARunThatReadItsNotifiedTurn(t *testing.T) {
	for _, leases := range []bool{false, true} {
		name := map[bool]string{false: "sqlite", true: "postgres"}[leases]
		t.Run(name, func(t *testing.T) {
			startedFirst, releaseFirst := make(chan struct{}), make(chan struct{})
			startedSecond, releaseSecond := make(chan struct{}), make(chan struct{})
			bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
				var p struct{ Text string }
				_ = json.Unmarshal(in.Message.Payload, &p)
				switch p.Text {
				case "first":
					close(startedFirst)
					<-releaseFirst
				case "second":
					close(startedSecond)
					<-releaseSecond
				}
				return echoText(ctx, in, out)
			})
			obs := &countingObserver{}
			// "first" is pending before the dispatcher starts, which runs
			// it as a message that did not fold; no sweep notifies it again.
			o := turns.DispatcherOptions{FoldWithin: 10 * time.Second, ClaimWithin: 10 * time.Second, Sweep: time.Hour, Observer: obs}
			storeFirst := func(f *foldFixture) { f.storeMessage(t, "first") }
			f := foldOn(t, leases, bot, o, storeFirst)
			<-startedFirst
			// "second" committed alone while the run runs "first", and its
			// turn notified, as the Chat API's commit does.
			f.storeMessage(t, "second")
			f.queue.Notify(f.ref())
			close(releaseFirst)
			<-startedSecond // the run read "second"'s turn and runs it

			done := make(chan []string)
			go func() {
				f.post(t, f.conv, "third")
				done <- f.texts(t)
			}()
			select {
			case texts := <-done:
				close(releaseSecond)
				t.Fatalf("createMessage returned while the run had a turn to end (it committed alone): %v, told %v", texts, obs.storedSince(0))
			case <-time.After(100 * time.Millisecond):
			}
			before := f.commits.n.Load()
			close(releaseSecond)
			eqStrings(t, "messages once createMessage returned", <-done, "first", "second", "echo first", "third", "echo second", "echo third")
			eqStrings(t, "how the message committed", obs.storedSince(0), "folded")
			if n := f.commits.n.Load() - before; n != 2 {
				t.Fatalf("%d commits, want 2 (the second's completion, the third with its answer)", n)
			}
		})
	}
}

// foldOn is a fold fixture for bot made foldable, on PostgreSQL with
// leases or on SQLite, with before run before its dispatcher starts.
func foldOn(t *testing.T, leases bool, bot turns.Bot, o turns.DispatcherOptions, before func(*foldFixture)) *foldFixture {
	t.Helper()
	if leases {
		return leasedFold(t, bot, o, before)
	}
	return newFoldFixtureOn(t, testdb.SQLite(t), turns.FoldableBot(bot), o, nil, before)
}

// delayedCompletions is a committer whose turn completions (writes
// without a turn of their own) are durable only delay after they
// committed, as where commits take long (a loaded machine, a remote
// database).
type delayedCompletions struct {
	store.Committer
	delay time.Duration
}

func (c delayedCompletions) Commit(ctx context.Context, w *store.Write) error {
	return c.Submit(ctx, w)()
}

func (c delayedCompletions) Submit(ctx context.Context, w *store.Write) func() error {
	wait := c.Committer.Submit(ctx, w)
	if w.Turn != nil {
		return wait
	}
	return func() error {
		err := wait()
		time.Sleep(c.delay)
		return err
	}
}

// TestFoldWaitsLongerForRunsThatEndSlowly: where runs' ends take long
// (their last turn's completion committed in 300 ms here), a message that
// comes while its conversation's run ends waits for it longer than
// ClaimWithin, twice what runs' ends took of late, and folds; up to
// maxClaimWithin, past which it commits alone. On SQLite, and on
// PostgreSQL with leases.
func TestFoldWaitsLongerForRunsThatEndSlowly(t *testing.T) {
	const delay = 300 * time.Millisecond
	for _, leases := range []bool{false, true} {
		for _, c := range []struct {
			name     string
			maxClaim time.Duration // 0: the default
			want     string
		}{
			{"twice the runs' ends, within the bound", 5 * time.Second, "folded"},
			{"the default bound", 0, turns.AloneBusy},
		} {
			engine := map[bool]string{false: "sqlite", true: "postgres"}[leases]
			t.Run(engine+"/"+c.name, func(t *testing.T) {
				events := 0
				started := make(chan struct{})
				bot := turns.FoldableBot(botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
					if in.Message == nil {
						if events++; events == 2 {
							close(started)
						}
						return nil
					}
					return echoText(ctx, in, out)
				}))
				obs := &countingObserver{}
				o := turns.DispatcherOptions{FoldWithin: time.Second, ClaimWithin: 5 * time.Millisecond, Observer: obs, Sweep: time.Hour}
				db := testdb.SQLite(t)
				if leases {
					o.Leases, o.LeaseTTL, o.Node = true, 10*time.Second, "n1"
					db = testdb.Postgres(t)
				}
				slow := func(c store.Committer) store.Committer { return delayedCompletions{c, delay} }
				// A first event's run teaches the dispatcher how long
				// runs' ends take (and, with leases, parks the lease).
				f := newFoldFixtureOn(t, db, bot, o, slow, func(f *foldFixture) {
					if c.maxClaim > 0 {
						turns.SetMaxClaim(f.dispatcher, c.maxClaim)
					}
					f.storeEvent(t)
				})
				waitUntil(t, "the first run's end", func() bool { return f.pending(t) == 0 && turns.Released(f.queue, f.ref()) })
				// The second event's run: the message comes as its turn
				// runs.
				f.storeEvent(t)
				f.queue.Notify(f.ref())
				<-started
				f.post(t, f.conv, "m")
				eqStrings(t, "how the message committed", obs.storedSince(0), c.want)
				if c.want == "folded" {
					eqStrings(t, "messages once createMessage returned", f.texts(t), "m", "echo m")
				}
			})
		}
	}
}
