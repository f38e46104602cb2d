package service

import (
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

// Workflow bots (issue #5): a bot JSON document published with
// publishFromBotJson becomes a bot version whose code is the JavaScript the
// workflow package generates (it starts with workflow.Marker) and whose
// BotJSON is the document. CodeBots hands such bots to workflowBot.

// ScopeDialog is the reserved state scope of a conversation's dialog state
// (owner: the conversation id).
const ScopeDialog = "workflow.dialog"

// PublishBotJSON validates a bot JSON document, stores it as a new bot
// version and deploys it. An invalid document is a 400 whose message and
// metadata.errors name the JSON pointer of every error; nothing changes.
func (s *Service) PublishBotJSON(ctx context.Context, c *Caller, id string, raw json.RawMessage) (*BotView, *model.BotVersion, error) {
	if err := c.require(model.PermWriteBots); err != nil {
		return nil, nil, err
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, model.Invalid("botJson: required")
	}
	wb, err := workflow.Parse(raw)
	if err != nil {
		var ve *workflow.ValidationError
		if errors.As(err, &ve) {
			return nil, nil, ve.ModelError()
		}
		return nil, nil, err
	}
	code := wb.Code()
	var view *BotView
	var version *model.BotVersion
	err = s.store.InTx(ctx, func(tx store.Store) error {
		b, err := tx.Bots().Get(ctx, c.Workspace.ID, id)
		if err != nil {
			return err
		}
		versions, err := tx.Bots().ListVersions(ctx, b.ID)
		if err != nil {
			return err
		}
		now := model.Now()
		v := &model.BotVersion{ID: model.NewID(), BotID: b.ID, Name: fmt.Sprintf("v%d", len(versions)+1),
			Description: "published from bot JSON", Code: code, BotJSON: string(wb.Raw), CreatedAt: now}
		if s.compiler != nil {
			if err := s.compiler.Compile(v.ID, code); err != nil {
				return err
			}
		}
		if err := tx.Bots().CreateVersion(ctx, v); err != nil {
			return err
		}
		b.Code, b.VersionID, b.DeployedAt, b.UpdatedAt = code, v.ID, now, now
		if b.Type == model.DefaultBotType {
			b.Type = "studio"
		}
		if err := tx.Bots().Update(ctx, b); err != nil {
			return err
		}
		if err := s.audit(ctx, tx, c.Workspace.ID, &c.Principal, model.AuditDeployBot, b.ID, b.Name, v.ID); err != nil {
			return err
		}
		version = v
		view, err = s.botView(ctx, tx, b)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	workflowState(s).botsChanged()
	return view, version, nil
}

// GetBotJSON returns the bot JSON document of the deployed version.
func (s *Service) GetBotJSON(ctx context.Context, c *Caller, id string) (json.RawMessage, error) {
	b, err := s.store.Bots().Get(ctx, c.Workspace.ID, id)
	if err != nil {
		return nil, err
	}
	if b.VersionID == "" {
		return nil, model.NotFound("Bot JSON of bot " + quote(id))
	}
	v, err := s.store.Bots().GetVersion(ctx, b.ID, b.VersionID)
	if err != nil {
		return nil, err
	}
	if v.BotJSON == "" {
		return nil, model.NotFound("Bot JSON of bot " + quote(id) + " (its deployed version is code)")
	}
	return json.RawMessage(v.BotJSON), nil
}

// workflowShared is the per-Service state of workflow bots: compiled
// documents by version. (Inactivity timeouts are in the store: see
// saveDialog and the scheduler.)
type workflowShared struct {
	mu       sync.Mutex
	compiled map[string]*workflow.Bot // by version id
	order    []string
	changed  chan struct{}
}

var workflowStates sync.Map // *Service → *workflowShared

func workflowState(s *Service) *workflowShared {
	if v, ok := workflowStates.Load(s); ok {
		return v.(*workflowShared)
	}
	v, _ := workflowStates.LoadOrStore(s, &workflowShared{compiled: map[string]*workflow.Bot{},
		changed: make(chan struct{}, 1)})
	return v.(*workflowShared)
}

func (w *workflowShared) botsChanged() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

const maxCompiledVersions = 256

// compiledBot returns the compiled document of a version.
func (s *Service) compiledBot(v *model.BotVersion) (*workflow.Bot, error) {
	w := workflowState(s)
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
	s      *Service
	engine *runtime.Engine
	bot    *model.Bot
}

func (s *Service) workflowBot(engine *runtime.Engine, b *model.Bot) Bot {
	return &workflowBot{s: s, engine: engine, bot: b}
}

func (wb *workflowBot) HandleTurn(ctx context.Context, in *TurnInput, out BotOutput) error {
	s, b := wb.s, wb.bot
	v, err := s.store.Bots().GetVersion(ctx, b.ID, b.VersionID)
	if err != nil {
		return err
	}
	if v.BotJSON == "" { // redeployed as code meanwhile
		return (&codeBot{s: s, engine: wb.engine, bot: b}).HandleTurn(ctx, in, out)
	}
	doc, err := s.compiledBot(v)
	if err != nil {
		return err
	}
	rin, err := s.prepareTurn(ctx, b, v, in, out)
	if err != nil {
		return err
	}
	dialog, err := s.loadDialog(ctx, b.ID, in.ConversationID)
	if err != nil {
		return err
	}
	res := workflow.RunTurn(ctx, wb.engine, doc, rin, dialog, nil, model.Now())
	if res.Err != nil {
		return res.Err
	}
	err = s.store.InTx(ctx, func(tx store.Store) error {
		if err := s.saveStates(ctx, tx, b.ID, in, res.States); err != nil {
			return err
		}
		if res.Outcome != nil {
			if err := saveDialog(ctx, tx, b.ID, in.ConversationID, in.UserID, res.Outcome.Dialog, doc); err != nil {
				return err
			}
		}
		return s.recordWorkflowTurn(ctx, tx, b.ID, v.ID, rin.Event, res)
	})
	return err
}

// saveDialog stores a conversation's dialog state and, in the same
// transaction, its inactivity due time (cleared when the dialog ended):
// the scheduler fires it from the store, so it survives restarts and
// fires on whichever node holds the scheduler lease.
func saveDialog(ctx context.Context, tx store.Store, botID, convID, userID string, d *workflow.Dialog, doc *workflow.Bot) error {
	raw, err := json.Marshal(d)
	if err != nil {
		return err
	}
	if err := tx.States().Put(ctx, botID, ScopeDialog, convID, raw); err != nil {
		return err
	}
	at := d.TimeoutAt(doc)
	if at.IsZero() {
		return tx.DialogTimeouts().Clear(ctx, botID, convID)
	}
	return tx.DialogTimeouts().Set(ctx, &store.DialogTimeout{BotID: botID, ConversationID: convID, UserID: userID, DueAt: at})
}

// recordTurn stores the turn's logs, and its problem and engine issues as
// bot issues.
// recordWorkflowTurn stores a workflow turn's logs (tagged with the
// workflow that ran) and its problems, the engine's own included.
func (s *Service) recordWorkflowTurn(ctx context.Context, tx store.Store, botID, versionID string, ev runtime.Event, res workflow.TurnResult) error {
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
	return s.recordTurn(ctx, tx, botID, versionID, ev, res.Logs, workflowID, problems)
}

func (s *Service) loadDialog(ctx context.Context, botID, convID string) (*workflow.Dialog, error) {
	raw, err := s.store.States().Get(ctx, botID, ScopeDialog, convID)
	if err != nil || raw == nil {
		return nil, err
	}
	var d workflow.Dialog
	if err := json.Unmarshal(raw, &d); err != nil {
		s.log.Warn("workflow: corrupt dialog state, starting afresh", "bot", botID, "conversation", convID, "err", err)
		return nil, nil
	}
	return &d, nil
}

// runSchedule runs a schedule trigger's turn: no conversation, so message
// cards are skipped; bot variables, actions and code run.
func (wb *workflowBot) runSchedule(ctx context.Context, v *model.BotVersion, doc *workflow.Bot, t *workflow.Trigger) error {
	s, b := wb.s, wb.bot
	now := model.Now()
	ev := runtime.Event{BotID: b.ID, CreatedOn: now, Direction: model.DirectionIncoming, ID: model.NewID(),
		Integration: model.IntegrationChat, Payload: map[string]any{"trigger": t.ID, "cron": t.Cron},
		Tags: runtime.NewTags(nil, nil, nil), Type: workflow.ScheduleEventType}
	ev.Preview = runtime.Preview(ev.Payload)
	botState, err := s.store.States().Get(ctx, b.ID, store.ScopeBot, b.ID)
	if err != nil {
		return err
	}
	host := &botHost{s: s, botID: b.ID, out: &turnOutput{s: s, botID: b.ID, last: now}}
	res := workflow.RunTurn(ctx, wb.engine, doc, runtime.TurnInput{
		BotID: b.ID, VersionID: v.ID, Timeout: time.Duration(b.MaxExecutionTime) * time.Second,
		Event: ev, States: runtime.States{Bot: botState}, Host: host,
	}, nil, t, now)
	if res.Err != nil {
		return res.Err
	}
	return s.store.InTx(ctx, func(tx store.Store) error {
		if res.States.Bot != nil {
			if err := tx.States().Put(ctx, b.ID, store.ScopeBot, b.ID, res.States.Bot); err != nil {
				return err
			}
		}
		return s.recordWorkflowTurn(ctx, tx, b.ID, v.ID, ev, res)
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
func (s *Service) enqueueTimeout(ctx context.Context, t *store.DialogTimeout) error {
	e := &model.Event{BotID: t.BotID, ID: model.NewID(), ConversationID: t.ConversationID, UserID: t.UserID,
		Type: workflow.TimeoutEventType, Payload: json.RawMessage(`{}`), CreatedAt: model.Now()}
	turn := &model.Turn{BotID: t.BotID, ConversationID: t.ConversationID, Kind: model.TurnEvent, RefID: e.ID,
		UserID: t.UserID, CreatedAt: e.CreatedAt}
	err := s.commitSignal(ctx, nil, turn, func(ctx context.Context, tx store.Store) error {
		claimed, err := tx.DialogTimeouts().Claim(ctx, t.BotID, t.ConversationID, t.DueAt)
		if err != nil {
			return err
		}
		if !claimed {
			return errTimeoutMoved
		}
		return tx.Chat().CreateEvent(ctx, e)
	})
	if errors.Is(err, errTimeoutMoved) {
		return nil
	}
	return err
}
