package integrations

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/wire"
)

// Outbox delivers the bot's messages in the conversations an integration
// owns to the integration (message_created, to the channel's handler of
// the message's type), in the order of the conversation's signal log.
//
// The log is the outbox: every message a bot sends (SDK bot, sandbox
// JavaScript, workflow, fallback) is a durable message_created signal,
// and store.Integrations keeps how far each conversation was delivered
// (DeliveredSeq). A committed signal wakes the conversation (Published,
// the store's after-commit hook); a sweep finds the conversations left
// behind (a restart, another node's commits). An integration that cannot
// be reached is retried with backoff without moving on, so the
// conversation's order holds; one that refuses a message (4xx: its
// handler failed) has it in its logs and the bot's issues, and the next
// message goes. A message the integration already acknowledged (its ack
// set tags under the integration's name) is not delivered again, so a
// crash after the ack and before the delivery's record sends nothing
// twice; a crash between the channel's send and the ack re-delivers the
// message once more with the same x-bp-idempotency-key (the message id):
// at least once, in order (docs/integrations.md).
type Outbox struct {
	*core
	mu      sync.Mutex
	running map[model.ConversationRef]bool
	dirty   map[model.ConversationRef]bool
	stop    chan struct{}
	stopped bool
	wg      sync.WaitGroup
	// owners caches each conversation's integration (fixed when the
	// conversation is created), so a message in a built-in channel's
	// conversation (chat, webchat) costs the outbox no database work.
	owners map[model.ConversationRef]string
	// SweepEvery is how often conversations left behind are looked for.
	sweepEvery time.Duration
}

func newOutbox(c *core) *Outbox {
	return &Outbox{core: c, running: map[model.ConversationRef]bool{}, dirty: map[model.ConversationRef]bool{},
		stop: make(chan struct{}), sweepEvery: 2 * time.Second, owners: map[model.ConversationRef]string{}}
}

// outboxLeaseTTL bounds how long a node that died keeps a conversation's
// deliveries; a live node renews it before each call.
const outboxLeaseTTL = 90 * time.Second

func outboxLease(ref model.ConversationRef) string {
	return "integration-outbox:" + ref.BotID + ":" + ref.ConversationID
}

// Published is the store's after-commit hook: a bot's message wakes its
// conversation's deliveries.
func (o *Outbox) Published(sig *model.Signal) {
	if sig.Type != model.SignalMessageCreated {
		return
	}
	// The cache first: in a built-in channel's conversation, the usual
	// case, the signal's data is not even parsed.
	ref := model.ConversationRef{BotID: sig.BotID, ConversationID: sig.ConversationID}
	o.mu.Lock()
	owner, known := o.owners[ref]
	o.mu.Unlock()
	if known && builtIn(owner) {
		return
	}
	var m struct {
		IsBot bool `json:"isBot"`
	}
	if json.Unmarshal(sig.Data, &m) != nil || !m.IsBot {
		return
	}
	o.wake(ref)
}

// builtIn says whether an integration name is one of Parley's own
// channels, which no outbox delivers to.
func builtIn(name string) bool {
	switch name {
	case "", model.IntegrationChat, model.IntegrationWebchat, model.IntegrationWebhook:
		return true
	}
	return false
}

// maxOwners bounds the owners cache; it is emptied when full (a miss
// costs one read).
const maxOwners = 100_000

func (o *Outbox) remember(ref model.ConversationRef, owner string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.owners) >= maxOwners {
		clear(o.owners)
	}
	o.owners[ref] = owner
}

// Start sweeps for undelivered conversations now and then every few
// seconds until Stop.
func (o *Outbox) Start(ctx context.Context) {
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		t := time.NewTicker(o.sweepEvery)
		defer t.Stop()
		for {
			o.sweep(ctx)
			select {
			case <-o.stop:
				return
			case <-t.C:
			}
		}
	}()
}

// Stop ends the sweep and waits for the deliveries in flight.
func (o *Outbox) Stop() {
	o.mu.Lock()
	if !o.stopped {
		o.stopped = true
		close(o.stop)
	}
	o.mu.Unlock()
	o.wg.Wait()
}

func (o *Outbox) sweep(ctx context.Context) {
	refs, err := o.store.Integrations().Undelivered(ctx, 500)
	if err != nil {
		o.log.Warn("integrations: looking for undelivered messages failed", "err", err)
		return
	}
	for _, ref := range refs {
		o.wake(ref)
	}
}

func (o *Outbox) wake(ref model.ConversationRef) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped {
		return
	}
	if o.running[ref] {
		o.dirty[ref] = true
		return
	}
	o.running[ref] = true
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		for {
			o.run(ref)
			o.mu.Lock()
			if !o.dirty[ref] || o.stopped {
				delete(o.running, ref)
				delete(o.dirty, ref)
				o.mu.Unlock()
				return
			}
			delete(o.dirty, ref)
			o.mu.Unlock()
		}
	}()
}

func (o *Outbox) isStopped() bool {
	select {
	case <-o.stop:
		return true
	default:
		return false
	}
}

// run delivers a conversation's pending bot messages, in order.
func (o *Outbox) run(ref model.ConversationRef) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-o.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	// Reads first: a conversation no installed integration owns (a
	// built-in channel's, or one whose integration was removed, which
	// the sweep does not look for either) is left without any write.
	conv, err := o.store.Chat().GetConversation(ctx, ref.BotID, ref.ConversationID)
	if err != nil {
		return
	}
	o.remember(ref, conv.Integration)
	if builtIn(conv.Integration) {
		return
	}
	in, err := o.installed(ctx, ref.BotID, conv.Integration)
	if err != nil || in == nil {
		return
	}
	lease := outboxLease(ref)
	held := func() bool {
		ok, err := o.store.Leases().Acquire(ctx, lease, o.node, outboxLeaseTTL)
		return err == nil && ok
	}
	if !held() {
		return // another node delivers it; the sweep comes back
	}
	defer func() { _ = o.store.Leases().Release(context.WithoutCancel(ctx), lease, o.node) }()
	for !o.isStopped() {
		delivered, err := o.store.Integrations().DeliveredSeq(ctx, ref.BotID, ref.ConversationID)
		if err != nil {
			return
		}
		sigs, err := o.store.Signals().SignalsAfter(ctx, ref.BotID, ref.ConversationID, delivered, 100)
		if err != nil || len(sigs) == 0 {
			return
		}
		for _, sig := range sigs {
			if sig.Type == model.SignalMessageCreated && in.entry.Enabled {
				var m struct {
					ID    string `json:"id"`
					IsBot bool   `json:"isBot"`
				}
				if json.Unmarshal(sig.Data, &m) == nil && m.IsBot {
					if !held() || !o.deliver(ctx, in, conv, m.ID) {
						return // stopped, or the lease moved: not recorded, delivered again later
					}
				}
			}
			if err := o.store.Integrations().SetDeliveredSeq(ctx, ref.BotID, ref.ConversationID, sig.Seq); err != nil {
				return
			}
		}
	}
}

// deliver calls the integration's message_created for one message until
// it answers; false when stopped first.
func (o *Outbox) deliver(ctx context.Context, in *installation, conv *model.Conversation, messageID string) bool {
	msg, err := o.store.Chat().GetMessage(ctx, conv.BotID, messageID)
	if model.IsNotFound(err) {
		return true // deleted before it was delivered
	}
	if err != nil {
		return false
	}
	if acked(in.entry.Name, msg) {
		return true // the integration acknowledged it before its answer was recorded: not sent twice
	}
	body, typ, err := o.messageBody(ctx, in, conv, msg)
	if err != nil {
		return false
	}
	extra := map[string]string{headerIdempotencyKey: msg.ID}
	for attempt := 0; ; attempt++ {
		res := o.call(ctx, in, OpMessageCreated, typ, body, extra)
		switch {
		case res.ok():
			return true
		case ctx.Err() != nil:
			return false
		case !res.retry():
			// The channel's handler failed: recorded, and the
			// conversation goes on.
			msg := "message_created (" + typ + ", message " + msg.ID + ") failed: " + res.describe()
			o.logLines(ctx, &model.IntegrationLog{IntegrationID: in.def.ID, BotID: conv.BotID, Level: "error",
				Message: msg, ConversationID: conv.ID})
			o.issue(ctx, conv.BotID, "integration_message_failed", "Integration "+in.entry.Name+": a message was refused", msg,
				map[string]any{"integration": in.entry.Name, "conversationId": conv.ID, "messageId": messageID})
			return true
		}
		if attempt == 0 {
			msg := "message_created (message " + msg.ID + "): the integration could not be reached (" + res.describe() + "); retrying with backoff"
			o.logLines(ctx, &model.IntegrationLog{IntegrationID: in.def.ID, BotID: conv.BotID, Level: "warn",
				Message: msg, ConversationID: conv.ID})
			o.issue(ctx, conv.BotID, "integration_unreachable", "Integration "+in.entry.Name+" could not be reached", msg,
				map[string]any{"integration": in.entry.Name, "conversationId": conv.ID})
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff(attempt)):
		}
		// The call may have reached the integration, which acked before
		// dying or failing to answer.
		if m, err := o.store.Chat().GetMessage(ctx, conv.BotID, messageID); err == nil && acked(in.entry.Name, m) {
			return true
		}
	}
}

// messageBody is the body of message_created: { conversation, user, type,
// payload, message }, tags as the integration sees them.
func (o *Outbox) messageBody(ctx context.Context, in *installation, conv *model.Conversation, m *model.Message) ([]byte, string, error) {
	alias := in.entry.Name
	n, err := o.store.Chat().CountMessages(ctx, conv.BotID, conv.ID)
	if err != nil {
		return nil, "", err
	}
	c := wire.NewRuntimeConversation(conv, n)
	c.Tags = model.IntegrationTagsOut(alias, conv.Tags)
	if c.Tags == nil {
		c.Tags = map[string]string{}
	}
	msg := wire.NewRuntimeMessage(m)
	msg.Tags = model.IntegrationTagsOut(alias, m.Tags)
	if msg.Tags == nil {
		msg.Tags = map[string]string{}
	}
	var user wire.RuntimeUser
	if u, err := o.store.Chat().GetUser(ctx, conv.BotID, m.UserID); err == nil {
		user = wire.NewRuntimeUser(u)
		user.Tags = model.IntegrationTagsOut(alias, u.Tags)
	} else {
		at := model.FormatTime(m.CreatedAt)
		user = wire.RuntimeUser{ID: m.UserID, CreatedAt: at, UpdatedAt: at}
	}
	if user.Tags == nil {
		user.Tags = map[string]string{}
	}
	body, err := json.Marshal(map[string]any{"conversation": c, "user": user, "type": msg.Type, "payload": msg.Payload,
		"message": msg})
	return body, msg.Type, err
}

// acked: the integration's ack (updateMessage with tags, which Parley
// prefixes with the integration's name) reached the message.
func acked(alias string, m *model.Message) bool {
	for k := range m.Tags {
		if strings.HasPrefix(k, alias+":") {
			return true
		}
	}
	return false
}
