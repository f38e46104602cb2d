package turns

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
)

// Failures are not silent: a message turn that fails (the bot's code threw,
// timed out or broke a limit; a workflow card failed with no error workflow
// answering; the bot's reply was refused; Go code returned an error) is
// logged by the dispatcher, recorded as an issue by the runtime, and
// answered with the bot's fallback message, so the person chatting is not
// left with typing dots and then nothing.

// FallbackBot is implemented by Bots that answer a failed message turn with
// a fallback message; an empty text sends nothing.
type FallbackBot interface {
	FallbackMessage(ctx context.Context) string
}

// DefaultFallbackMessage is the fallback message of a bot whose chat
// integration does not set `fallbackMessage` (new bots get it set).
const DefaultFallbackMessage = model.DefaultFallbackMessage

// TurnFailed is the error a Runtime bot returns after recording a turn
// that failed in the bot's own code (the problem is already an issue).
// Soft failures (a workflow card's error) get the fallback only when the
// turn sent no message (an error workflow may have answered).
type TurnFailed struct {
	Code, Title string
	Soft        bool
}

func (e *TurnFailed) Error() string { return fmt.Sprintf("bot turn failed: %s: %s", e.Code, e.Title) }

// needsFallback reports whether a failed or silent turn gets the fallback.
func needsFallback(err error, out *turnOutput) bool {
	if err == nil {
		return out.refused > 0 && out.sent == 0 // every reply was refused
	}
	var later *RetryLater
	if errors.As(err, &later) {
		return false // not failed: the turn stays pending and runs again
	}
	var tf *TurnFailed
	if errors.As(err, &tf) && tf.Soft {
		return out.sent == 0
	}
	return true
}

// sendFallback answers a failed message turn with the bot's fallback text.
func (d *Dispatcher) sendFallback(ctx context.Context, bot Bot, in *TurnInput, out *turnOutput, cause error) {
	fb, ok := bot.(FallbackBot)
	if !ok || in.Message == nil {
		return
	}
	text := fb.FallbackMessage(ctx)
	if text == "" {
		return
	}
	payload, _ := json.Marshal(map[string]string{"type": "text", "text": text})
	if _, err := out.CreateMessage(ctx, OutgoingMessage{Payload: payload}); err != nil {
		d.log.Warn("turns: sending the fallback message failed", "err", err, "bot", in.BotID, "conversation", in.ConversationID)
		return
	}
	d.log.Info("turns: sent the fallback message", "bot", in.BotID, "conversation", in.ConversationID, "cause", fmt.Sprint(cause))
}

// FallbackMessage is the text of the bot's chat integration's
// `fallbackMessage`, DefaultFallbackMessage when unset.
func (rt *Runtime) fallbackMessage(ctx context.Context, botID string) string {
	ins, err := rt.store.Bots().Integrations(ctx, botID)
	if err != nil {
		return DefaultFallbackMessage
	}
	for _, in := range ins {
		if in.Name != model.IntegrationChat {
			continue
		}
		if v, ok := in.Configuration[model.ChatFallbackMessage]; ok {
			s, _ := v.(string)
			return s
		}
	}
	return DefaultFallbackMessage
}

func (cb *codeBot) FallbackMessage(ctx context.Context) string {
	return cb.rt.fallbackMessage(ctx, cb.bot.ID)
}

func (wb *workflowBot) FallbackMessage(ctx context.Context) string {
	return wb.rt.fallbackMessage(ctx, wb.bot.ID)
}

// problemFailure is the TurnFailed of a sandbox problem (nil for none).
func problemFailure(p *runtime.Problem) error {
	if p == nil {
		return nil
	}
	return &TurnFailed{Code: p.Code, Title: p.Title}
}

// IssueNoCode is the issue code of messages sent to a bot with nothing
// deployed.
const IssueNoCode = "no_code_deployed"

// noCodeBot answers the turns of a bot that has no deployed code: each
// becomes an occurrence of one issue (Report counts them), and the server
// log says so once per bot every noCodeLogEvery.
type noCodeBot struct {
	rt  *Runtime
	bot *model.Bot
}

const noCodeLogEvery = 10 * time.Minute

// noCodeLog remembers when each bot's "no code" was last logged.
type noCodeLog struct {
	mu   sync.Mutex
	last map[string]time.Time
}

func (l *noCodeLog) due(botID string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last = map[string]time.Time{}
	}
	if t, ok := l.last[botID]; ok && now.Sub(t) < noCodeLogEvery {
		return false
	}
	if len(l.last) > 10000 {
		clear(l.last)
	}
	l.last[botID] = now
	return true
}

func (nb *noCodeBot) HandleTurn(ctx context.Context, in *TurnInput, out BotOutput) error {
	rt, b := nb.rt, nb.bot
	if rt.noCode.due(b.ID, time.Now()) {
		rt.log.Warn("turns: a bot with no deployed code received a message; deploy code or bot JSON to answer it",
			"bot", b.ID, "name", b.Name, "conversation", in.ConversationID)
	}
	ev, err := runtimeEvent(b.ID, in)
	if err != nil {
		return err
	}
	return rt.store.InTx(ctx, func(tx store.Store) error {
		return recordTurn(ctx, tx, b.ID, "", ev, nil, "", []turnProblem{{IssueNoCode, "configuration",
			"Messages received but no code is deployed",
			"The bot received a message or event but has no deployed code or bot JSON, so nothing answered it. Deploy code (updateBot with code, the dashboard's Code tab) or a bot JSON (parley bot deploy)."}})
	})
}
