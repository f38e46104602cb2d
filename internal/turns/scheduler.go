package turns

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/workflow"
)

// schedulerLease is the store lease of the one node that fires schedules
// and timeouts.
const schedulerLease = "workflow-scheduler"

// SchedulerOptions tune the scheduler; zero values take defaults.
type SchedulerOptions struct {
	// Tick is how often timers and schedules are checked (default 1 s).
	Tick time.Duration
	// Refresh is how often the list of workflow bots is reloaded (default
	// 30 s; a publish on this node reloads it at once).
	Refresh time.Duration
	// LeaseTTL is the scheduler leader lease (default DefaultLeaseTTL),
	// renewed every quarter of it: across nodes sharing a database only
	// the lease holder fires, and another node takes over about LeaseTTL
	// after the leader's last renewal.
	LeaseTTL time.Duration
	// CatchUp bounds how far back a leader fires the scheduled times it
	// finds missed (a dead leader's, a stopped cluster's): each time
	// within it fires once, older ones are skipped (default 15 min).
	CatchUp time.Duration
	Node    string
}

// Scheduler fires the schedule triggers of workflow bots and queues
// timeout turns for dialogs inactive past their timeout (their due times
// are in the store, see saveDialog), on one node: the holder of the
// schedulerLease lease. Whatever node ran a dialog's last turn, and
// across restarts, its timeout fires once (enqueueTimeout claims it).
// Each scheduled time of a trigger fires once across leaders: the
// firing's effects commit with the trigger's fired-up-to time
// (store.ScheduleFires), fenced by the leader's lease epoch (fireOnce).
type Scheduler struct {
	rt *Runtime
	o  SchedulerOptions

	cancel context.CancelFunc
	wg     sync.WaitGroup

	bots []scheduledBot

	mu    sync.Mutex
	epoch int64 // of the scheduler lease while this node holds it, else 0
	since time.Time
}

type scheduledBot struct {
	bot       *model.Bot
	version   *model.BotVersion
	doc       *workflow.Bot
	schedules []workflow.Schedule
}

// maxFiresPerTick bounds the scheduled times of one trigger a tick fires
// (catching up after a takeover); the rest fire on the next ticks.
const maxFiresPerTick = 10

// NewScheduler returns a scheduler; call Start and Stop.
func NewScheduler(rt *Runtime, o SchedulerOptions) *Scheduler {
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	if o.Refresh <= 0 {
		o.Refresh = 30 * time.Second
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.CatchUp <= 0 {
		o.CatchUp = 15 * time.Minute
	}
	if o.Node == "" {
		o.Node = model.NewNodeID()
	}
	return &Scheduler{rt: rt, o: o}
}

// Start runs the scheduler until Stop.
func (ws *Scheduler) Start(ctx context.Context) {
	ctx, ws.cancel = context.WithCancel(ctx)
	ws.wg.Add(2)
	go func() {
		defer ws.wg.Done()
		ws.holdLease(ctx)
	}()
	go func() {
		defer ws.wg.Done()
		ws.loop(ctx)
	}()
}

// Stop stops the scheduler and releases its lease: another node leads at
// once. Stop is idempotent.
func (ws *Scheduler) Stop() {
	if ws.cancel != nil {
		ws.cancel()
	}
	ws.wg.Wait()
	if epoch := ws.lead(0); epoch != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ws.rt.store.Leases().Release(ctx, schedulerLease, ws.o.Node)
	}
}

// Leading reports whether this node leads (holds the scheduler lease) and
// since when.
func (ws *Scheduler) Leading() (bool, time.Time) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.epoch != 0, ws.since
}

// leaderEpoch is the epoch of the lease this node holds, 0 when it does
// not lead.
func (ws *Scheduler) leaderEpoch() int64 {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.epoch
}

// lead records the epoch held now (0: none) and returns the previous one.
func (ws *Scheduler) lead(epoch int64) int64 {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	prev := ws.epoch
	ws.epoch = epoch
	if epoch != prev {
		ws.since = time.Now()
	}
	return prev
}

// holdLease takes the scheduler lease when it is free or expired and
// renews it every quarter TTL, apart from the firing (which may take
// longer than the TTL): a leader loses it only by stalling or losing the
// database for about a TTL. A failing renewal is retried until the lease
// would have expired; a refused one ends the leadership at once.
func (ws *Scheduler) holdLease(ctx context.Context) {
	t := time.NewTicker(ws.o.LeaseTTL / 4)
	defer t.Stop()
	leases := ws.rt.store.Leases()
	var renewed time.Time
	for {
		if epoch := ws.leaderEpoch(); epoch != 0 {
			ok, err := leases.Renew(ctx, schedulerLease, ws.o.Node, epoch, ws.o.LeaseTTL)
			switch {
			case err == nil && ok:
				renewed = time.Now()
			case err != nil && time.Since(renewed) < ws.o.LeaseTTL:
			default:
				if ctx.Err() != nil {
					return
				}
				ws.lead(0)
				ws.rt.log.Warn("workflow scheduler: lease lost", "err", err, "node", ws.o.Node, "epoch", epoch)
			}
		}
		if ws.leaderEpoch() == 0 {
			l, ok, err := leases.Take(ctx, schedulerLease, ws.o.Node, ws.o.LeaseTTL)
			if err != nil && ctx.Err() == nil {
				ws.rt.log.Warn("workflow scheduler: lease failed", "err", err)
			}
			if err == nil && ok {
				renewed = time.Now()
				args := []any{"node", ws.o.Node, "epoch", l.Epoch}
				if l.From != "" {
					args = append(args, "from_node", l.From, "gap_s", time.Since(l.FromExpired.Add(-ws.o.LeaseTTL)).Seconds())
				}
				ws.rt.log.Info("workflow scheduler: leading", args...)
				ws.lead(l.Epoch)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (ws *Scheduler) loop(ctx context.Context) {
	tick := time.NewTicker(ws.o.Tick)
	defer tick.Stop()
	var refreshed time.Time
	var refreshedAt int64 // the epoch of the last refresh: a new leader reloads
	shared := ws.rt.workflows
	for {
		select {
		case <-ctx.Done():
			return
		case <-shared.changed:
			refreshed = time.Time{}
			continue
		case <-tick.C:
		}
		epoch := ws.leaderEpoch()
		if epoch == 0 {
			continue
		}
		now := time.Now()
		ws.fireTimeouts(ctx, now)
		if now.Sub(refreshed) >= ws.o.Refresh || refreshedAt != epoch {
			ws.refresh(ctx)
			refreshed, refreshedAt = now, epoch
		}
		ws.fire(ctx, store.Fence{Name: schedulerLease, Holder: ws.o.Node, Epoch: epoch}, now)
	}
}

// timeoutBatch is how many due timeouts one query reads; a tick reads at
// most maxTimeoutBatches of them.
const (
	timeoutBatch      = 100
	maxTimeoutBatches = 10
)

// fireTimeouts queues a timeout turn for every dialog due at now. A row of
// a bot that is gone or no longer a workflow bot is dropped.
func (ws *Scheduler) fireTimeouts(ctx context.Context, now time.Time) {
	workflowBots := map[string]bool{}
	for range maxTimeoutBatches {
		due, err := ws.rt.store.DialogTimeouts().Due(ctx, now, timeoutBatch)
		if err != nil {
			if ctx.Err() == nil {
				ws.rt.log.Warn("workflow: reading due timeouts failed", "err", err)
			}
			return
		}
		failed := false // a failed row stays: the next tick retries it
		for _, t := range due {
			if ctx.Err() != nil {
				return
			}
			if err := ws.fireTimeout(ctx, t, workflowBots); err != nil {
				failed = true
				if ctx.Err() == nil {
					ws.rt.log.Warn("workflow: queueing a timeout turn failed", "err", err, "bot", t.BotID, "conversation", t.ConversationID)
				}
			}
		}
		if failed || len(due) < timeoutBatch {
			return
		}
	}
}

func (ws *Scheduler) fireTimeout(ctx context.Context, t *store.DialogTimeout, workflowBots map[string]bool) error {
	isWorkflow, ok := workflowBots[t.BotID]
	if !ok {
		b, err := ws.rt.store.Bots().GetByID(ctx, t.BotID)
		if err != nil && !model.IsNotFound(err) {
			return err
		}
		isWorkflow = err == nil && workflow.IsWorkflowCode(b.Code)
		workflowBots[t.BotID] = isWorkflow
	}
	if !isWorkflow { // redeployed as code: nothing to time out
		_, err := ws.rt.store.DialogTimeouts().Claim(ctx, t.BotID, t.ConversationID, t.DueAt)
		return err
	}
	return ws.rt.enqueueTimeout(ctx, t)
}

// refresh reloads the workflow bots that have schedule triggers.
func (ws *Scheduler) refresh(ctx context.Context) {
	ids, err := ws.rt.store.Bots().ListAll(ctx)
	if err != nil {
		if ctx.Err() == nil {
			ws.rt.log.Warn("workflow: listing bots failed", "err", err)
		}
		return
	}
	var bots []scheduledBot
	for _, id := range ids {
		b, err := ws.rt.store.Bots().GetByID(ctx, id)
		if err != nil || b.VersionID == "" || !workflow.IsWorkflowCode(b.Code) {
			continue
		}
		v, err := ws.rt.store.Bots().GetVersion(ctx, b.ID, b.VersionID)
		if err != nil || v.BotJSON == "" {
			continue
		}
		doc, err := ws.rt.compiledBot(v)
		if err != nil || len(doc.Schedules()) == 0 {
			continue
		}
		bots = append(bots, scheduledBot{bot: b, version: v, doc: doc, schedules: doc.Schedules()})
	}
	ws.bots = bots
}

type triggerKey struct{ bot, trigger string }

// fire fires, for every schedule trigger, the scheduled times after its
// fired-up-to time and up to now, oldest first, each once (fireOnce);
// at most maxFiresPerTick per trigger and tick. A trigger seen for the
// first time starts at its version's publish if that was within the last
// Refresh (the time this node may take to see it), else now. Missed
// times go back at most CatchUp, and never before the publish of the
// bot's current version.
func (ws *Scheduler) fire(ctx context.Context, fence store.Fence, now time.Time) {
	if len(ws.bots) == 0 {
		return
	}
	rows, err := ws.rt.store.ScheduleFires().List(ctx)
	if err != nil {
		if ctx.Err() == nil {
			ws.rt.log.Warn("workflow: reading schedule times failed", "err", err)
		}
		return
	}
	upTo := make(map[triggerKey]time.Time, len(rows))
	for _, r := range rows {
		upTo[triggerKey{r.BotID, r.TriggerID}] = r.FiredUpTo
	}
	for _, sb := range ws.bots {
		for _, sc := range sb.schedules {
			k := triggerKey{sb.bot.ID, sc.Trigger.ID}
			from, ok := upTo[k]
			if !ok {
				start := latest(sb.version.CreatedAt, now.Add(-ws.o.Refresh-ws.o.Tick))
				if err := ws.rt.store.ScheduleFires().Start(ctx, k.bot, k.trigger, start.Truncate(time.Millisecond)); err != nil && ctx.Err() == nil {
					ws.rt.log.Warn("workflow: starting a schedule failed", "err", err, "bot", k.bot, "trigger", k.trigger)
				}
				continue // fires from the next tick, from the row as stored
			}
			for range maxFiresPerTick {
				after := latest(from, now.Add(-ws.o.CatchUp), sb.version.CreatedAt)
				next := sc.Spec.Next(after.Local())
				if next.IsZero() || next.After(now) {
					break
				}
				err := ws.fireOnce(ctx, sb, sc, fence, from, next)
				if errors.Is(err, store.ErrFenced) {
					ws.rt.log.Warn("workflow scheduler: lease taken over, the firing is fenced off", "bot", k.bot, "trigger", k.trigger, "scheduled_at", next)
					return
				}
				if errors.Is(err, errScheduleMoved) {
					break // fired by another leader meanwhile: read again next tick
				}
				if err != nil {
					if ctx.Err() == nil {
						ws.rt.log.Warn("workflow: schedule trigger failed", "err", err, "bot", k.bot, "trigger", k.trigger, "scheduled_at", next)
					}
					break
				}
				from = next
			}
		}
	}
}

// errScheduleMoved aborts a firing whose trigger another leader advanced.
var errScheduleMoved = errors.New("schedule trigger already fired")

// fireOnce runs the trigger for its scheduled time `at` and commits the
// run's effects in one transaction with the trigger's fired-up-to time
// moved from `from` to at, first checking that this node still leads at
// the lease epoch of the fence: a leader that dies before the commit
// leaves the time to its successor, and a stalled leader that was taken
// over, or a second leader, commits nothing (ErrFenced, errScheduleMoved).
// A run that fails still advances the time (its issue is recorded), as
// a failed turn is not retried.
func (ws *Scheduler) fireOnce(ctx context.Context, sb scheduledBot, sc workflow.Schedule, fence store.Fence, from, at time.Time) error {
	wb := &workflowBot{rt: ws.rt, bot: sb.bot}
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return wb.runSchedule(tctx, sb.version, sb.doc, sc.Trigger, at, func(tx store.Store) error {
		if err := tx.Leases().Check(ctx, fence); err != nil {
			return err
		}
		ok, err := tx.ScheduleFires().Advance(ctx, sb.bot.ID, sc.Trigger.ID, from, at)
		if err == nil && !ok {
			err = errScheduleMoved
		}
		return err
	})
}

// latest is the latest of times.
func latest(times ...time.Time) time.Time {
	var l time.Time
	for _, t := range times {
		if t.After(l) {
			l = t
		}
	}
	return l
}
