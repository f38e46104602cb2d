package turns

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/runtime"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/workflow"
)

// Workflow bots: a bot JSON document published with publishFromBotJson
// (administration) becomes a bot version whose code is the JavaScript the
// workflow package generates and whose BotJSON is the document.

// ScopeDialog is the reserved state scope of a conversation's dialog state
// (owner: the conversation id).
const ScopeDialog = "workflow.dialog"

// workflowCache holds compiled bot JSON documents by version, and wakes
// the scheduler when bots change. (Inactivity timeouts are in the store:
// see saveDialog and the scheduler.)
type workflowCache struct {
	mu       sync.Mutex
	compiled map[string]*workflow.Bot // by version id
	order    []string
	changed  chan struct{}
}

func newWorkflowCache() *workflowCache {
	return &workflowCache{compiled: map[string]*workflow.Bot{}, changed: make(chan struct{}, 1)}
}

func (w *workflowCache) botsChanged() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

const maxCompiledVersions = 256

// compiledBot returns the compiled document of a version.
func (rt *Runtime) compiledBot(v *model.BotVersion) (*workflow.Bot, error) {
	w := rt.workflows
	w.mu.Lock()
	b, ok := w.compiled[v.ID]
	w.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := workflow.Parse([]byte(v.BotJSON))
	if err != nil {
		return nil, fmt.Errorf("bot %s version %s: stored bot JSON: %w", v.BotID, v.ID, err)
	}
	w.mu.Lock()
	if _, ok := w.compiled[v.ID]; !ok {
		w.compiled[v.ID] = b
		w.order = append(w.order, v.ID)
		if len(w.order) > maxCompiledVersions {
			delete(w.compiled, w.order[0])
			w.order = w.order[1:]
		}
	}
	w.mu.Unlock()
	return b, nil
}

// workflowBot runs the turns of a bot whose deployed version is a bot JSON.
type workflowBot struct {
	rt  *Runtime
	bot *model.Bot
}

func (wb *workflowBot) HandleTurn(ctx context.Context, in *TurnInput, out BotOutput) error {
	rt, b := wb.rt, wb.bot
	v, err := rt.version(ctx, b)
	if err != nil {
		return err
	}
	if v.BotJSON == "" { // redeployed as code meanwhile
		return (&codeBot{rt: rt, bot: b}).HandleTurn(ctx, in, out)
	}
	doc, err := rt.compiledBot(v)
	if err != nil {
		return err
	}
	bases := doc.KnowledgeBaseNames()
	rin, err := rt.prepareTurn(ctx, b, v, in, out, bases)
	if err != nil {
		return err
	}
	// The dialog as the conversation's last turn kept it, or read.
	stored := in.dialog
	if stored == nil {
		raw, err := rt.store.States().Get(ctx, b.ID, ScopeDialog, in.ConversationID)
		if err != nil {
			return err
		}
		stored = &keptDialog{raw: raw}
	}
	res := workflow.RunTurn(ctx, rt.engine, doc, rin, rt.decodeDialog(b.ID, in.ConversationID, stored.raw), nil, model.Now(), rt.knowledge(ctx, b.ID, bases))
	if res.Err != nil {
		return res.Err
	}
	// What the next turn starts with may be kept, as a code bot's, and
	// with it the dialog the turn leaves stored (as it found it, unless
	// its completion stores another).
	tellStart(out, rin.Host, res.TurnResult)
	next := &keptDialog{raw: stored.raw}
	save := false     // the completion stores next.raw
	var due time.Time // and, if not zero, its inactivity due time
	if res.Outcome != nil {
		raw, err := json.Marshal(res.Outcome.Dialog)
		if err != nil {
			return err
		}
		// An idle dialog the store holds as it is needs no write: stored
		// idle, its inactivity timeout was cleared with it (saveDialog),
		// and only a dialog write sets one.
		due = res.Outcome.Dialog.TimeoutAt(doc)
		if !due.IsZero() || !bytes.Equal(raw, stored.raw) {
			save, next.raw = true, raw
		}
	}
	if o, ok := out.(*turnOutput); ok {
		o.nextDialog = next
	}
	// Stored with the turn's held replies and its completion, in one
	// transaction (EffectHolder).
	complete := func(ctx context.Context, tx store.Store) error {
		if err := rt.saveStates(ctx, tx, b.ID, in, res.States); err != nil {
			return err
		}
		if save {
			if err := saveDialog(ctx, tx, b.ID, in.ConversationID, in.UserID, next.raw, due); err != nil {
				return err
			}
		}
		return rt.recordWorkflowTurn(ctx, tx, b.ID, v.ID, rin.Event, res)
	}
	// Beyond the conversation's rows (its state, its dialog and its
	// inactivity timeout, keyed by the conversation, its logs): the
	// user's or the bot's state, an issue.
	addCompletion(out, complete, sharedStates(b.ID, in, res.States),
		res.Problem != nil || res.Outcome != nil && len(res.Outcome.Issues) > 0)
	if res.Problem != nil {
		return problemFailure(res.Problem)
	}
	if res.Outcome != nil && len(res.Outcome.Issues) > 0 {
		is := res.Outcome.Issues[0] // recorded with the completion; an error workflow may have answered
		return &TurnFailed{Code: is.Code, Title: is.Title, Soft: true}
	}
	return nil
}

// HoldsEffects makes workflow bots EffectHolders, as code bots.
func (wb *workflowBot) HoldsEffects() bool { return true }

// foldable: as a code bot's, a workflow's turn steps outside what its
// completion holds only through its host (its code cards' client calls,
// their reads), which tells the turn's effectGate first; its dialog, read
// or kept from the last turn (keptDialog), is written only by the
// conversation's turns (a dialog timeout is a turn, which a folded commit
// finds in between).
func (wb *workflowBot) foldable() {}

// saveDialog stores a conversation's dialog state (its JSON, raw) and, in
// the same transaction, its inactivity due time at (zero: the dialog is
// idle, none): the scheduler fires it from the store, so it survives
// restarts and fires on whichever node holds the scheduler lease.
func saveDialog(ctx context.Context, tx store.Store, botID, convID, userID string, raw json.RawMessage, at time.Time) error {
	if err := tx.States().Put(ctx, botID, ScopeDialog, convID, raw); err != nil {
		return err
	}
	if at.IsZero() {
		return tx.DialogTimeouts().Clear(ctx, botID, convID)
	}
	return tx.DialogTimeouts().Set(ctx, &store.DialogTimeout{BotID: botID, ConversationID: convID, UserID: userID, DueAt: at})
}

// recordWorkflowTurn stores a workflow turn's logs (tagged with the
// workflow that ran) and its problems, the engine's own included.
func (rt *Runtime) recordWorkflowTurn(ctx context.Context, tx store.Store, botID, versionID string, ev runtime.Event, res workflow.TurnResult) error {
	var problems []turnProblem
	if p := res.Problem; p != nil {
		problems = append(problems, turnProblem{p.Code, issueCategory(p.Code), p.Title, p.Description})
	}
	if res.Outcome != nil {
		for _, is := range res.Outcome.Issues {
			problems = append(problems, turnProblem{is.Code, "user_code", is.Title, is.Description})
		}
	}
	workflowID := ""
	if res.EventTrigger != nil {
		workflowID = res.EventTrigger.FlowID
	}
	return recordTurn(ctx, tx, botID, versionID, ev, res.Logs, workflowID, problems)
}

// decodeDialog decodes a stored dialog state (nil for none).
func (rt *Runtime) decodeDialog(botID, convID string, raw []byte) *workflow.Dialog {
	if raw == nil {
		return nil
	}
	var d workflow.Dialog
	if err := json.Unmarshal(raw, &d); err != nil {
		rt.log.Warn("workflow: corrupt dialog state, starting afresh", "bot", botID, "conversation", convID, "err", err)
		return nil
	}
	return &d
}

// runSchedule runs a schedule trigger's turn for its scheduled time at
// (event.payload.scheduledAt): no conversation, so message cards are
// skipped; bot variables, actions and code run. Its effects (the bot
// state, logs, issues) commit in one transaction that starts with claim,
// which fails the whole when that time was fired by someone else. A run
// that fails commits the claim alone and returns its error.
func (wb *workflowBot) runSchedule(ctx context.Context, v *model.BotVersion, doc *workflow.Bot, t *workflow.Trigger, at time.Time, claim func(tx store.Store) error) error {
	rt, b := wb.rt, wb.bot
	now := model.Now()
	ev := runtime.Event{BotID: b.ID, CreatedOn: now, Direction: model.DirectionIncoming, ID: model.NewID(),
		Integration: model.IntegrationChat, Tags: runtime.NewTags(nil, nil, nil), Type: workflow.ScheduleEventType,
		Payload: map[string]any{"trigger": t.ID, "cron": t.Cron, "scheduledAt": at.UTC().Format(time.RFC3339Nano)}}
	ev.Preview = runtime.Preview(ev.Payload)
	botState, err := rt.store.States().Get(ctx, b.ID, store.ScopeBot, b.ID)
	if err != nil {
		return err
	}
	host := &botHost{store: rt.store, botID: b.ID, out: &turnOutput{out: rt.out, botID: b.ID, last: now}}
	res := workflow.RunTurn(ctx, rt.engine, doc, runtime.TurnInput{
		BotID: b.ID, VersionID: v.ID, Timeout: time.Duration(b.MaxExecutionTime) * time.Second,
		Event: ev, States: runtime.States{Bot: botState}, Host: host,
	}, nil, t, now, rt.knowledge(ctx, b.ID, doc.KnowledgeBaseNames()))
	if res.Err != nil {
		if err := rt.store.InTx(ctx, claim); err != nil {
			return err
		}
		return res.Err
	}
	return rt.store.InTx(ctx, func(tx store.Store) error {
		if err := claim(tx); err != nil {
			return err
		}
		if res.States.Bot != nil {
			if err := tx.States().Put(ctx, b.ID, store.ScopeBot, b.ID, res.States.Bot); err != nil {
				return err
			}
		}
		return rt.recordWorkflowTurn(ctx, tx, b.ID, v.ID, ev, res)
	})
}

// errTimeoutMoved aborts queueing a timeout turn whose due time another
// node claimed, or that newer activity moved.
var errTimeoutMoved = errors.New("dialog timeout moved or already claimed")

// enqueueTimeout queues the turn that runs a dialog's timeout workflow,
// claiming the stored due time in the same transaction: of several nodes
// (or ticks) firing one timeout, one queues the turn. The engine checks
// again that the dialog really expired, so a turn queued just before
// newer activity is harmless.
func (rt *Runtime) enqueueTimeout(ctx context.Context, t *store.DialogTimeout) error {
	e := &model.Event{BotID: t.BotID, ID: model.NewID(), ConversationID: t.ConversationID, UserID: t.UserID,
		Type: workflow.TimeoutEventType, Payload: json.RawMessage(`{}`), CreatedAt: model.Now()}
	turn := &model.Turn{BotID: t.BotID, ConversationID: t.ConversationID, Kind: model.TurnEvent, RefID: e.ID,
		UserID: t.UserID, CreatedAt: e.CreatedAt}
	err := rt.out.commit.Commit(ctx, &store.Write{Turn: turn, Apply: func(ctx context.Context, tx store.Store) error {
		claimed, err := tx.DialogTimeouts().Claim(ctx, t.BotID, t.ConversationID, t.DueAt)
		if err != nil {
			return err
		}
		if !claimed {
			return errTimeoutMoved
		}
		return tx.Chat().CreateEvent(ctx, e)
	}})
	if errors.Is(err, errTimeoutMoved) {
		return nil
	}
	return err
}
