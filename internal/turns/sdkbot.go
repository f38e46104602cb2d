package turns

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/runtime"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/wire"
)

// SDK bots are bots built with @botpress/sdk: HTTP handlers that Parley
// calls the way Botpress Cloud does (the SDK's src/bot/server). Two forms:
//   - a development bot (Dev with a URL): Parley calls that URL;
//   - a deployed bundle (IsBundle(code)): a CommonJS bundle that package
//     botproc runs in a Node.js child process, called on 127.0.0.1.
//
// The bot answers through the Runtime API (`/v1/chat/...`): its replies
// are createMessage calls made while its turn is in flight, attributed to
// the turn by store.Deliveries so that a turn delivered twice replies once.

// Headers of a call to a bot (the SDK's src/consts.ts).
const (
	headerBotID         = "x-bot-id"
	headerOperation     = "x-bp-operation"
	headerType          = "x-bp-type"
	headerConfiguration = "x-bp-configuration"
	// headerIdempotencyKey is Parley's: the turn a call delivers
	// ("<conversation id>:<turn seq>"), the same on every delivery of that
	// turn (retries, and re-runs on another node after a failover), so the
	// bot can de-duplicate its own side effects.
	headerIdempotencyKey = "x-bp-idempotency-key"
)

type idempotencyKey struct{}

// IdempotencyKey is the x-bp-idempotency-key of the calls that deliver a
// conversation's turn seq.
func IdempotencyKey(conversationID string, seq int64) string {
	return fmt.Sprintf("%s:%d", conversationID, seq)
}

// Operations of a call to a bot (x-bp-operation).
const (
	OpEventReceived   = "event_received"
	OpRegister        = "register"
	OpPing            = "ping"
	OpActionTriggered = "action_triggered"
)

// Bundles runs deployed Node.js bundles (package botproc's Supervisor).
type Bundles interface {
	// URL returns the base URL of the process serving a bot version's
	// bundle, starting it when needed.
	URL(ctx context.Context, botID, versionID, code string) (string, error)
	// Retire stops the bot's processes of versions other than keep ("":
	// all of them).
	Retire(botID, keep string)
	// Available reports why bundles cannot run here (no Node.js), or nil.
	Available() error
}

// bundlePattern recognises a Node.js bundle: CommonJS code that assigns
// module.exports or exports.handler (what esbuild's `format: 'cjs'` and
// the Botpress CLI produce), or code starting with the "// parley:node"
// marker. Parley's sandbox has no `module` or `exports`, so sandbox code
// never does either.
var bundlePattern = regexp.MustCompile(`\bmodule\.exports\b|\bexports\.handler\s*=|^\s*// parley:node\b`)

// IsBundle reports whether deployed code is a Node.js bundle rather than
// sandbox JavaScript.
// It runs on every turn: code without either word is told apart without the
// regular expression.
func IsBundle(code string) bool {
	if !strings.Contains(code, "exports") && !strings.Contains(code, "parley:node") {
		return false
	}
	return bundlePattern.MatchString(code)
}

// SDKBots calls the bots built with @botpress/sdk: their turns, their
// actions (the Runtime API's callAction) and their register operation.
// It is built before the Runtime API, which calls actions through it, and
// before the turns Runtime, which runs SDK bots' turns with it.
type SDKBots struct {
	store   store.Store
	bundles Bundles // nil: bundles cannot run here
	http    *http.Client
	log     *slog.Logger
	replies replyTracker // the bots' replies in progress on this node
}

// NewSDKBots returns the caller of SDK bots; bundles runs deployed Node.js
// bundles (nil: none can run here).
func NewSDKBots(st store.Store, bundles Bundles, log *slog.Logger) *SDKBots {
	return &SDKBots{store: st, bundles: bundles, log: log, http: &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second}}}
}

// bot is the SDK bot of b (a development bot with a URL, or a deployed
// bundle), or nil when b is not one.
func (s *SDKBots) bot(b *model.Bot) *sdkBot {
	if s == nil {
		return nil
	}
	if b.Dev && b.URL != "" || b.VersionID != "" && IsBundle(b.Code) {
		return &sdkBot{sdk: s, bot: b}
	}
	return nil
}

// lookup finds an SDK bot by id; nil, nil when the bot is of another kind.
func (s *SDKBots) lookup(ctx context.Context, botID string) (*sdkBot, error) {
	b, err := s.store.Bots().GetByID(ctx, botID)
	if err != nil {
		return nil, err
	}
	return s.bot(b), nil
}

// BotChanged is told that a bot was deployed, changed or deleted:
// processes of bundle versions no longer deployed stop, and an SDK bot is
// sent the register operation.
func (s *SDKBots) BotChanged(botID string) {
	if s == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b, err := s.store.Bots().GetByID(ctx, botID)
		switch {
		case s.bundles == nil:
		case model.IsNotFound(err):
			s.bundles.Retire(botID, "")
		case err != nil:
			return
		case b.Dev && b.URL != "", !IsBundle(b.Code):
			s.bundles.Retire(botID, "")
		default:
			s.bundles.Retire(botID, b.VersionID)
		}
		if err == nil && s.bot(b) != nil {
			s.register(botID)
		}
	}()
}

// Compile checks code before it is deployed (administration.Compiler): a
// bundle needs Node.js on this server; anything else is sandbox JavaScript
// checked by the engine.
func (rt *Runtime) Compile(versionID, code string) error {
	if IsBundle(code) {
		if rt.sdk == nil || rt.sdk.bundles == nil {
			return model.Invalid("code is a Node.js bundle (it assigns module.exports), but this server does not run Node.js bundles")
		}
		if err := rt.sdk.bundles.Available(); err != nil {
			return model.Invalid("code is a Node.js bundle (it assigns module.exports), but this server cannot run it: %v; install Node.js or deploy sandbox JavaScript", err)
		}
		return nil
	}
	return rt.engine.Compile(versionID, code)
}

// RetryLater is returned by a Bot whose bot could not be reached (refused,
// timed out, 5xx): the turn stays pending and the Dispatcher tries the
// conversation again after a backoff.
type RetryLater struct{ Err error }

func (e *RetryLater) Error() string { return "bot unavailable: " + e.Err.Error() }
func (e *RetryLater) Unwrap() error { return e.Err }

// sdkBot runs the turns of an SDK bot on its deployed version (a bundle)
// or its development URL.
type sdkBot struct {
	sdk *SDKBots
	bot *model.Bot
}

// baseURL is where the bot is called.
func (sb *sdkBot) baseURL(ctx context.Context) (string, error) {
	b := sb.bot
	if b.Dev && b.URL != "" {
		return b.URL, nil
	}
	if sb.sdk.bundles == nil {
		return "", errors.New("no Node.js supervisor")
	}
	return sb.sdk.bundles.URL(ctx, b.ID, b.VersionID, b.Code)
}

// replyDrainMax bounds how long a delivery waits for the replies of the
// delivery before it (replyTracker); replySettle is how long after a call
// that failed once it reached the bot the next delivery waits for the
// dead process's last requests to reach the Runtime API (they may sit
// unread in a socket on a busy machine).
const (
	replyDrainMax = 10 * time.Second
	replySettle   = time.Second
)

// sdkCallAttempts is how many times one delivery calls an unreachable bot
// before handing the turn back to the Dispatcher's backoff.
var sdkCallBackoff = []time.Duration{0, 100 * time.Millisecond, 400 * time.Millisecond}

func (sb *sdkBot) HandleTurn(ctx context.Context, in *TurnInput, out BotOutput) error {
	st, b := sb.sdk.store, sb.bot
	evType, body, evID, err := sdkEventBody(ctx, st, b.ID, in)
	if err != nil {
		return err
	}
	dl := st.Deliveries()
	// end closes the delivery once the turn is done with (it replied, or
	// its code failed): a createMessage after it is not one of the turn's
	// replies. A turn handed back for a retry stays open: a late reply of
	// the process that died counts as the turn's reply, and the next
	// delivery gets it back instead of sending a second one.
	// A failure to close it is logged, not the turn's: the turn did run.
	end := func() {
		if err := dl.End(context.WithoutCancel(ctx), b.ID, in.ConversationID); err != nil {
			sb.sdk.log.Warn("turns: closing an SDK bot's delivery failed", "err", err, "bot", b.ID, "conversation", in.ConversationID)
		}
	}

	var res sdkResult
	for _, wait := range sdkCallBackoff {
		if wait > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
		}
		// Every call is a delivery: the bot's replies count from the 1st,
		// once those of an earlier delivery still in progress are stored.
		sb.sdk.replies.wait(ctx, b.ID, in.ConversationID, replyDrainMax)
		if err := dl.Begin(ctx, b.ID, in.ConversationID, in.Seq); err != nil {
			return err
		}
		res = sb.call(context.WithValue(ctx, idempotencyKey{}, IdempotencyKey(in.ConversationID, in.Seq)), OpEventReceived, evType, body)
		if res.reached {
			sb.sdk.replies.settle(b.ID, in.ConversationID, replySettle)
		}
		if !res.retry() || ctx.Err() != nil {
			break
		}
	}
	ev := runtime.Event{ID: evID, Type: evType, ConversationID: in.ConversationID, UserID: in.UserID}
	switch {
	case res.ok():
		end()
		return nil
	case res.retry():
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if in.Attempt == 0 {
			// One issue per unreachable turn, not one per retry.
			p := turnProblem{"bot_unreachable", "other", "The bot could not be reached",
				fmt.Sprintf("Calling the bot failed (%s); the turn is retried with backoff until the bot answers.", res.describe())}
			logs := []model.LogEntry{sdkLog(in, evID, "error", "bot unreachable: "+res.describe())}
			_ = st.InTx(ctx, func(tx store.Store) error {
				return recordTurn(ctx, tx, b.ID, b.VersionID, ev, logs, "", []turnProblem{p})
			})
		}
		return &RetryLater{Err: errors.New(res.describe())}
	default:
		// The bot's code failed (the SDK answers 400 with a Runtime
		// error): recorded, not retried.
		end()
		p := turnProblem{"bot_error", "user_code", "The bot's handler failed", res.describe()}
		logs := []model.LogEntry{sdkLog(in, evID, "error", res.describe())}
		return st.InTx(ctx, func(tx store.Store) error {
			return recordTurn(ctx, tx, b.ID, b.VersionID, ev, logs, "", []turnProblem{p})
		})
	}
}

func sdkLog(in *TurnInput, eventID, level, msg string) model.LogEntry {
	return model.LogEntry{Time: model.Now(), Level: level, Message: msg, ConversationID: in.ConversationID,
		UserID: in.UserID, EventID: eventID}
}

// sdkResult is the outcome of one call to a bot.
type sdkResult struct {
	status int
	body   []byte
	err    error // transport error: refused, reset, timed out
	// reached: the call may have reached the bot (a transport error after
	// the connection was made), so the bot may have replies in flight.
	reached bool
}

func (r sdkResult) ok() bool    { return r.err == nil && r.status >= 200 && r.status < 300 }
func (r sdkResult) retry() bool { return r.err != nil || r.status >= 500 }

// describe renders the failure for logs and issues: the Runtime error's
// message when the bot sent one.
func (r sdkResult) describe() string {
	if r.err != nil {
		return r.err.Error()
	}
	return wire.DescribeFailure(r.status, r.body)
}

// sdkCallTimeout bounds one call when the bot sets no maxExecutionTime.
const sdkCallTimeout = 60 * time.Second

// call POSTs one operation to the bot.
func (sb *sdkBot) call(ctx context.Context, op, typ string, body []byte) sdkResult {
	base, err := sb.baseURL(ctx)
	if err != nil {
		return sdkResult{err: err}
	}
	timeout := sdkCallTimeout
	if sb.bot.MaxExecutionTime > 0 {
		timeout = time.Duration(sb.bot.MaxExecutionTime) * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, base, bytes.NewReader(body))
	if err != nil {
		return sdkResult{status: http.StatusBadRequest, body: []byte(`{"message":"invalid bot URL"}`)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(headerBotID, sb.bot.ID)
	req.Header.Set(headerOperation, op)
	req.Header.Set(headerType, typ)
	req.Header.Set(headerConfiguration, configurationHeader(sb.bot))
	if k, ok := ctx.Value(idempotencyKey{}).(string); ok {
		req.Header.Set(headerIdempotencyKey, k)
	}
	resp, err := sb.sdk.http.Do(req)
	if err != nil {
		return sdkResult{err: err, reached: !errors.Is(err, syscall.ECONNREFUSED)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return sdkResult{err: err}
	}
	return sdkResult{status: resp.StatusCode, body: data}
}

// configurationHeader is x-bp-configuration: the base64 JSON of the bot's
// configuration data, `e30=` ({}) when it has none.
func configurationHeader(b *model.Bot) string {
	data := map[string]any{}
	if cfg, ok := b.Spec["configuration"].(map[string]any); ok {
		if d, ok := cfg["data"].(map[string]any); ok {
			data = d
		}
	}
	raw, _ := json.Marshal(data)
	return base64.StdEncoding.EncodeToString(raw)
}

// CallAction runs one of an SDK bot's actions (action_triggered) and
// returns its output; for bots of other kinds it is model.NotFound.
func (s *SDKBots) CallAction(ctx context.Context, botID, typ string, input json.RawMessage) (json.RawMessage, error) {
	sb, err := s.lookup(ctx, botID)
	if err != nil {
		return nil, err
	}
	if sb == nil {
		return nil, model.NotFound("Action " + quoteJSON(typ))
	}
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	body, _ := json.Marshal(map[string]any{"type": typ, "input": input})
	res := sb.call(ctx, OpActionTriggered, typ, body)
	if !res.ok() {
		return nil, model.Errorf(model.ErrRuntime, "action %s failed: %s", typ, res.describe())
	}
	var out struct {
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(res.body, &out); err != nil {
		return nil, model.Errorf(model.ErrRuntime, "action %s: the bot's answer is not JSON", typ)
	}
	if len(out.Output) == 0 {
		out.Output = json.RawMessage(`{}`)
	}
	return out.Output, nil
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// register tells an SDK bot it was deployed or its URL set (register
// operation); failures are logged, never fatal.
func (s *SDKBots) register(botID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := s.lookup(ctx, botID)
	if err != nil || sb == nil {
		return
	}
	if res := sb.call(ctx, OpRegister, OpRegister, []byte(`{}`)); !res.ok() {
		s.log.Warn("turns: registering SDK bot failed", "bot", botID, "err", res.describe())
	}
}

// sdkEventBody builds the body `{ event }` of an event_received call and
// returns the event type (x-bp-type) and id.
func sdkEventBody(ctx context.Context, st store.Store, botID string, in *TurnInput) (typ string, body []byte, eventID string, err error) {
	e := in.Event
	ev := map[string]any{"createdAt": model.FormatTime(e.CreatedAt), "conversationId": e.ConversationID,
		"userId": e.UserID, "status": "processed", "failureReason": nil}
	if in.Message != nil && e.MessageID != "" {
		typ = "message_created"
		eventID = uuid.NewSHA1(eventNamespace, []byte(botID+"/"+e.MessageID)).String()
		msg := runtimeMessage(in.Message, model.DirectionIncoming)
		if len(in.MessageTags) > 0 {
			msg["tags"] = in.MessageTags
		}
		payload := map[string]any{"message": msg}
		if u, err := st.Chat().GetUser(ctx, botID, e.UserID); err == nil {
			payload["user"] = runtimeUser(u)
		} else if !model.IsNotFound(err) {
			return "", nil, "", err
		}
		if c, err := st.Chat().GetConversation(ctx, botID, e.ConversationID); err == nil {
			payload["conversation"] = runtimeConversation(c)
		} else if !model.IsNotFound(err) {
			return "", nil, "", err
		}
		ev["messageId"] = e.MessageID
		ev["payload"] = payload
	} else {
		typ = e.Type
		if !strings.Contains(typ, ":") {
			typ = model.IntegrationChat + ":" + typ
		}
		eventID = e.ID
		var p any
		if err := json.Unmarshal(e.Payload, &p); err != nil || p == nil {
			p = map[string]any{}
		}
		ev["payload"] = p
	}
	ev["id"], ev["type"] = eventID, typ
	body, err = json.Marshal(map[string]any{"event": ev})
	return typ, body, eventID, err
}

// runtimeMessage renders a chat message in the Runtime API's Message
// shape: the payload's type moves to `type`.
func runtimeMessage(m *wire.Message, direction string) map[string]any {
	var payload map[string]any
	_ = json.Unmarshal(m.Payload, &payload)
	typ, _ := payload["type"].(string)
	delete(payload, "type")
	if payload == nil {
		payload = map[string]any{}
	}
	return map[string]any{"id": m.ID, "createdAt": m.CreatedAt, "updatedAt": m.CreatedAt, "type": typ,
		"payload": payload, "direction": direction, "userId": m.UserID, "conversationId": m.ConversationID,
		"tags": map[string]string{}}
}

func runtimeUser(u *model.ChatUser) map[string]any {
	tags := u.Tags
	if tags == nil {
		tags = map[string]string{}
	}
	v := map[string]any{"id": u.ID, "createdAt": model.FormatTime(u.CreatedAt), "updatedAt": model.FormatTime(u.UpdatedAt),
		"tags": tags}
	if u.Name != "" {
		v["name"] = u.Name
	}
	if u.PictureURL != "" {
		v["pictureUrl"] = u.PictureURL
	}
	return v
}

// runtimeConversation renders the conversation of an event: its
// integration (the alias of the integration that owns it, "chat" for the
// Chat API's) and channel, and its tags (an integration's prefixed by its
// alias).
func runtimeConversation(c *model.Conversation) map[string]any {
	integration, channel, tags := c.Integration, c.Channel, c.Tags
	if integration == "" {
		integration = model.IntegrationChat
	}
	if channel == "" {
		channel = "channel"
	}
	if tags == nil {
		tags = map[string]string{}
	}
	return map[string]any{"id": c.ID, "createdAt": model.FormatTime(c.CreatedAt), "updatedAt": model.FormatTime(c.UpdatedAt),
		"channel": channel, "integration": integration, "tags": tags}
}
