package turns

import (
	"context"
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
	// LeaseTTL is the scheduler leader lease (default 30 s): across nodes
	// sharing a database only the lease holder fires schedule triggers.
	LeaseTTL time.Duration
	Node     string
}

// Scheduler fires the schedule triggers of workflow bots and queues
// timeout turns for dialogs inactive past their timeout (their due times
// are in the store, see saveDialog), on one node: the holder of the
// schedulerLease lease. Whatever node ran a dialog's last turn, and
// across restarts, its timeout fires once (enqueueTimeout claims it).
type Scheduler struct {
	rt *Runtime
	o  SchedulerOptions

	cancel context.CancelFunc
	wg     sync.WaitGroup

	bots   []scheduledBot
	leader bool
	last   time.Time
}

type scheduledBot struct {
	bot       *model.Bot
	version   *model.BotVersion
	doc       *workflow.Bot
	schedules []workflow.Schedule
}

// NewScheduler returns a scheduler; call Start and Stop.
func NewScheduler(rt *Runtime, o SchedulerOptions) *Scheduler {
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	if o.Refresh <= 0 {
		o.Refresh = 30 * time.Second
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 30 * time.Second
	}
	if o.Node == "" {
		o.Node = model.NewNodeID()
	}
	return &Scheduler{rt: rt, o: o}
}

// Start runs the scheduler until Stop.
func (ws *Scheduler) Start(ctx context.Context) {
	ctx, ws.cancel = context.WithCancel(ctx)
	ws.wg.Add(1)
	go func() {
		defer ws.wg.Done()
		ws.loop(ctx)
	}()
}

// Stop stops the scheduler and releases its lease.
func (ws *Scheduler) Stop() {
	if ws.cancel != nil {
		ws.cancel()
	}
	ws.wg.Wait()
	if ws.leader {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ws.rt.store.Leases().Release(ctx, schedulerLease, ws.o.Node)
	}
}

func (ws *Scheduler) loop(ctx context.Context) {
	tick := time.NewTicker(ws.o.Tick)
	defer tick.Stop()
	var refreshed, leased time.Time
	ws.last = time.Now()
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
		now := time.Now()
		if now.Sub(leased) >= ws.o.LeaseTTL/3 {
			ok, err := ws.rt.store.Leases().Acquire(ctx, schedulerLease, ws.o.Node, ws.o.LeaseTTL)
			if err != nil && ctx.Err() == nil {
				ws.rt.log.Warn("workflow: scheduler lease failed", "err", err)
			}
			ws.leader = err == nil && ok
			leased = now
		}
		if !ws.leader {
			ws.last = now
			continue
		}
		ws.fireTimeouts(ctx, now)
		if now.Sub(refreshed) >= ws.o.Refresh {
			ws.refresh(ctx)
			refreshed = now
		}
		ws.fire(ctx, ws.last, now)
		ws.last = now
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

// fire runs every schedule with a fire time in (from, to].
func (ws *Scheduler) fire(ctx context.Context, from, to time.Time) {
	for _, sb := range ws.bots {
		for _, sc := range sb.schedules {
			next := sc.Spec.Next(from)
			if next.IsZero() || next.After(to) {
				continue
			}
			wb := &workflowBot{rt: ws.rt, bot: sb.bot}
			tctx, cancel := context.WithTimeout(ctx, time.Minute)
			err := wb.runSchedule(tctx, sb.version, sb.doc, sc.Trigger)
			cancel()
			if err != nil && ctx.Err() == nil {
				ws.rt.log.Warn("workflow: schedule trigger failed", "err", err, "bot", sb.bot.ID, "trigger", sc.Trigger.ID)
			}
		}
	}
}
