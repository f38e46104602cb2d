// Package store defines Parley's storage interfaces, one small interface per
// aggregate. Implementations live in sqlstore (shared SQL) with the sqlite
// and postgres packages opening it; storetest is their conformance suite.
//
// Stores are dumb: they keep and find data. Authorization and business
// rules live in the use-case packages (docs/architecture.md). Every method returns model errors:
// model.NotFound for a missing row, model.Conflict for a duplicate key.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

// Store gives access to every aggregate, outside or inside a transaction.
type Store interface {
	Accounts() Accounts
	Tokens() Tokens
	Workspaces() Workspaces
	Members() Members
	Bots() Bots
	Audit() Audit
	Logs() Logs
	Issues() Issues
	Chat() Chat
	Signals() Signals
	States() States
	Leases() Leases
	// DialogTimeouts and ScheduleFires are in timeouts.go.
	DialogTimeouts() DialogTimeouts
	ScheduleFires() ScheduleFires
	// Deliveries is in deliveries.go.
	Deliveries() Deliveries
	// Files and Feedback are in files.go.
	Files() Files
	Feedback() Feedback
	// RuntimeStates, Workflows, Tasks and Analytics are in runtime.go.
	RuntimeStates() RuntimeStates
	Workflows() Workflows
	Tasks() Tasks
	Analytics() Analytics
	// Tables is in tables.go.
	Tables() Tables
	// Integrations is in integrations.go.
	Integrations() Integrations
	// Handoffs and Activity are in support.go.
	Handoffs() Handoffs
	Activity() Activity

	// InTx runs fn in one transaction: everything fn does through tx commits
	// together or not at all. Nested calls join the outer transaction.
	InTx(ctx context.Context, fn func(tx Store) error) error
	// Transient reports whether err is the database being unavailable for
	// now (a refused or lost connection, a server out of connections, a
	// lock held past the wait, a serialization failure): the same work may
	// succeed when retried, so it is not a failure of that work.
	Transient(err error) bool
}

// DB is a whole database: a Store plus lifecycle.
type DB interface {
	Store
	Ping(ctx context.Context) error
	// Engine names the database engine ("sqlite" or "postgres").
	Engine() string
	// Migrated returns an error unless every migration of this binary is
	// applied (for readiness checks).
	Migrated(ctx context.Context) error
	// NewCommitter returns the engine's way of committing the chat
	// pipeline's writes (commit.go): batched on SQLite, one transaction
	// each on PostgreSQL. after runs once per committed write.
	NewCommitter(after AfterCommit) Committer
	// Stats reports the connection pool (for metrics).
	Stats() sql.DBStats
	Close() error
}

// Page asks for one page of a keyset-paginated list. Token is the opaque
// value of a previous page's NextToken ("" for the first page).
type Page struct {
	Token string
	Size  int
}

// Accounts stores people.
type Accounts interface {
	Create(ctx context.Context, a *model.Account) error
	Get(ctx context.Context, id string) (*model.Account, error)
	GetByEmail(ctx context.Context, email string) (*model.Account, error)
	Update(ctx context.Context, a *model.Account) error
	Count(ctx context.Context) (int, error)
}

// Tokens stores hashed credentials.
type Tokens interface {
	Create(ctx context.Context, t *model.Token) error
	GetByHash(ctx context.Context, hash string) (*model.Token, error)
	// ListByAccount lists personal access tokens, newest first.
	ListByAccount(ctx context.Context, accountID string) ([]*model.Token, error)
	// ListByBot lists bot API keys, newest first.
	ListByBot(ctx context.Context, botID string) ([]*model.Token, error)
	// ListByIntegration lists integration API keys, newest first.
	ListByIntegration(ctx context.Context, integrationID string) ([]*model.Token, error)
	Get(ctx context.Context, id string) (*model.Token, error)
	Delete(ctx context.Context, id string) error
}

// Workspaces stores workspaces; BotCount is filled on reads.
type Workspaces interface {
	Create(ctx context.Context, w *model.Workspace) error
	Get(ctx context.Context, id string) (*model.Workspace, error)
	Update(ctx context.Context, w *model.Workspace) error
	Delete(ctx context.Context, id string) error
	// ListForAccount lists the workspaces the account is a member of,
	// newest first; handle filters when not empty.
	ListForAccount(ctx context.Context, accountID, handle string, p Page) ([]*model.Workspace, string, error)
	GetByHandle(ctx context.Context, handle string) (*model.Workspace, error)
	// ListPublic lists the workspaces marked public, newest first.
	ListPublic(ctx context.Context, p Page) ([]*model.Workspace, string, error)
}

// Members stores workspace memberships; DisplayName and ProfilePicture are
// filled from the account on reads.
type Members interface {
	Create(ctx context.Context, m *model.Member) error
	Get(ctx context.Context, workspaceID, id string) (*model.Member, error)
	GetByAccount(ctx context.Context, workspaceID, accountID string) (*model.Member, error)
	UpdateRole(ctx context.Context, workspaceID, id string, role model.Role) error
	Delete(ctx context.Context, workspaceID, id string) error
	// List is oldest first (the owner comes first).
	List(ctx context.Context, workspaceID string, p Page) ([]*model.Member, string, error)
	CountRole(ctx context.Context, workspaceID string, role model.Role) (int, error)
}

// BotFilter narrows ListBots.
type BotFilter struct {
	WorkspaceID string
	Dev         bool
	Tags        map[string]string
	// SortField is "createdAt" (default) or "updatedAt"; Ascending flips
	// the default newest-first order.
	SortField string
	Ascending bool
}

// Bots stores bots, their integrations and versions.
type Bots interface {
	Create(ctx context.Context, b *model.Bot) error
	Get(ctx context.Context, workspaceID, id string) (*model.Bot, error)
	// GetByID finds a bot in any workspace (for runtime use).
	GetByID(ctx context.Context, id string) (*model.Bot, error)
	Update(ctx context.Context, b *model.Bot) error
	Delete(ctx context.Context, workspaceID, id string) error
	List(ctx context.Context, f BotFilter, p Page) ([]*model.Bot, string, error)
	// ListAll lists the ids of every bot (for start-up recovery).
	ListAll(ctx context.Context) ([]string, error)

	PutIntegration(ctx context.Context, in *model.Integration) error
	Integrations(ctx context.Context, botID string) ([]*model.Integration, error)
	DeleteIntegration(ctx context.Context, botID, name string) error
	// IntegrationByWebhook finds an integration by its public webhook id.
	IntegrationByWebhook(ctx context.Context, webhookID string) (*model.Integration, error)

	CreateVersion(ctx context.Context, v *model.BotVersion) error
	GetVersion(ctx context.Context, botID, id string) (*model.BotVersion, error)
	// ListVersions is newest first.
	ListVersions(ctx context.Context, botID string) ([]*model.BotVersion, error)
}

// Audit stores the audit trail.
type Audit interface {
	Record(ctx context.Context, r *model.AuditRecord) error
	// List is newest first.
	List(ctx context.Context, workspaceID string, p Page) ([]*model.AuditRecord, string, error)
}

// Logs stores bot log lines.
type Logs interface {
	Append(ctx context.Context, entries ...*model.LogEntry) error
	// List is newest first.
	List(ctx context.Context, f model.LogFilter, p Page) ([]*model.LogEntry, string, error)
}

// Issues stores bot issues and their occurrences.
type Issues interface {
	// Report records one occurrence of the issue with i.BotID and i.Code,
	// creating the issue the first time, and returns the stored issue.
	Report(ctx context.Context, i *model.Issue, ev *model.IssueEvent) (*model.Issue, error)
	Get(ctx context.Context, botID, id string) (*model.Issue, error)
	// List is most recently seen first.
	List(ctx context.Context, botID string, p Page) ([]*model.Issue, string, error)
	Delete(ctx context.Context, botID, id string) error
	// Events is newest first.
	Events(ctx context.Context, issueID string, p Page) ([]*model.IssueEvent, string, error)
}

// Chat stores the conversational data of bots. Every method is scoped by
// bot id: data of one bot is never reachable through another.
type Chat interface {
	CreateUser(ctx context.Context, u *model.ChatUser) error
	GetUser(ctx context.Context, botID, id string) (*model.ChatUser, error)
	UpdateUser(ctx context.Context, u *model.ChatUser) error
	DeleteUser(ctx context.Context, botID, id string) error

	CreateConversation(ctx context.Context, c *model.Conversation) error
	GetConversation(ctx context.Context, botID, id string) (*model.Conversation, error)
	DeleteConversation(ctx context.Context, botID, id string) error
	// ListConversations lists conversations owned by ownerID, newest first.
	ListConversations(ctx context.Context, botID, ownerID string, p Page) ([]*model.Conversation, string, error)
	// ListBotConversations lists every conversation of a bot, newest first;
	// with a search, those where it is found (case-insensitive substring)
	// in the conversation id, the id or name of its owner or a
	// participant, or the text of one of its messages.
	ListBotConversations(ctx context.Context, botID, search string, p Page) ([]*model.Conversation, string, error)

	AddParticipant(ctx context.Context, botID, conversationID, userID string, at time.Time) error
	RemoveParticipant(ctx context.Context, botID, conversationID, userID string) error
	IsParticipant(ctx context.Context, botID, conversationID, userID string) (bool, error)
	// RequireParticipant fails with ErrNotParticipant unless the user is a
	// participant of the conversation, as seen by the transaction it runs
	// in (pipelined, the check fails in the engine, before the COMMIT).
	RequireParticipant(ctx context.Context, botID, conversationID, userID string) error
	// ListParticipants is in the order participants were added.
	ListParticipants(ctx context.Context, botID, conversationID string, p Page) ([]*model.ChatUser, string, error)

	// CreateMessage stores m in its conversation (NotFound when there is
	// none). Outside tests it runs in a transaction that also appends the
	// message's signal, whose update of the conversation's row is what
	// orders it with DeleteConversation on PostgreSQL (no foreign key
	// there: migration 0016).
	CreateMessage(ctx context.Context, m *model.Message) error
	GetMessage(ctx context.Context, botID, id string) (*model.Message, error)
	DeleteMessage(ctx context.Context, botID, id string) error
	// ListMessages is newest first.
	ListMessages(ctx context.Context, botID, conversationID string, p Page) ([]*model.Message, string, error)

	CreateEvent(ctx context.Context, e *model.Event) error
	GetEvent(ctx context.Context, botID, id string) (*model.Event, error)

	// RuntimeChat is in runtime.go.
	RuntimeChat
}

// Signals is a conversation's log of signals (what its streams replay)
// and its queue of turns for the bot, numbered from one sequence.
type Signals interface {
	// AppendSignal gives s the conversation's next sequence number and
	// stores it; call it inside the transaction that stores what the signal
	// announces.
	AppendSignal(ctx context.Context, s *model.Signal) error
	// AppendSignalTurn is AppendSignal(s) then, when t is not nil,
	// EnqueueTurn(t) (same conversation), taking both numbers at once.
	AppendSignalTurn(ctx context.Context, s *model.Signal, t *model.Turn) error
	// SignalsAfter returns the conversation's signals with Seq > after, in
	// order, at most limit of them.
	SignalsAfter(ctx context.Context, botID, conversationID string, after int64, limit int) ([]*model.Signal, error)
	// RedactMessageSignal rewrites the message_created signal of a
	// deleted message in the log with typ and data (its deletion), keeping
	// its seq: a replay never resurrects deleted content. No signal is not
	// an error.
	RedactMessageSignal(ctx context.Context, botID, conversationID, messageID, typ string, data json.RawMessage) error

	// EnqueueTurn stores an incoming bot event to be run.
	EnqueueTurn(ctx context.Context, t *model.Turn) error
	// PendingTurns returns the oldest pending turns of a conversation, in
	// order.
	PendingTurns(ctx context.Context, botID, conversationID string, limit int) ([]*model.Turn, error)
	// PendingTurnInputs is PendingTurns with what each turn refers to
	// and whether the conversation is in handoff, read in the same query
	// (the turn dispatcher's one read per batch of turns).
	PendingTurnInputs(ctx context.Context, botID, conversationID string, limit int) ([]PendingTurn, error)
	// PendingConversations lists conversations with pending turns, at most
	// limit of them (for start-up recovery).
	PendingConversations(ctx context.Context, limit int) ([]model.ConversationRef, error)
	// UnleasedPendingConversations is PendingConversations without the
	// conversations whose lease (named leasePrefix+botID+":"+conversationID)
	// is held and unexpired: what a node sweeping for a dead node's work
	// should try (the others are running elsewhere).
	UnleasedPendingConversations(ctx context.Context, leasePrefix string, limit int) ([]model.ConversationRef, error)
	// CompleteTurn removes a turn once it has run.
	CompleteTurn(ctx context.Context, botID, conversationID string, seq int64) error
	// RequireLastTurn fails with ErrTurnBetween unless the conversation's
	// last turn number is seq. In a pipelined transaction it is written to
	// fail in the engine (WithRequiredRow), so that it needs no answer
	// before the COMMIT: a Write's Then there, whose turn is numbered only
	// at the commit (Write.Run).
	RequireLastTurn(ctx context.Context, botID, conversationID string, seq int64) error
	// GiveBackSignals gives back the conversation's last n signal
	// numbers, taken ahead and not used in this transaction
	// (SignalsAhead).
	GiveBackSignals(ctx context.Context, botID, conversationID string, n int64) error
	// RequireFirstTurn fails with ErrTurnBetween when a turn of the
	// conversation numbered before seq is pending: the turn seq must not
	// complete before it. Pipelined, as RequireLastTurn.
	RequireFirstTurn(ctx context.Context, botID, conversationID string, seq int64) error
}

// PendingTurn is a pending turn with what it refers to: Message for a
// message turn, Event for an event turn; both are nil when the referenced
// row is gone (deleted before the turn ran) or for another kind.
type PendingTurn struct {
	Turn    *model.Turn
	Message *model.Message
	Event   *model.Event
	// Handoff is set when the conversation is in handoff (store.Handoffs)
	// as the turn is read: its bot is paused.
	Handoff bool
	// Start is what the turn starts with (States.GetTurn), read in the
	// same query as the batch. The first turn of the batch starts from
	// it; a later one only while the turns before it in the batch changed
	// none of it (turns.startKeeper), else it reads its own when it
	// starts. Whatever was written before the turn's message is in it: the
	// batch is read after every message of its turns was committed.
	Start *TurnStart
}

// State scopes of bot state.
const (
	ScopeUser         = "user"
	ScopeConversation = "conversation"
	ScopeBot          = "bot"
)

// StateKey names one state document: a bot's, a user's or a
// conversation's (Scope, and the owner's id).
type StateKey struct {
	BotID, Scope, OwnerID string
}

// States stores bot state documents (JSON objects) per scope and owner id.
type States interface {
	// Get returns nil, nil when no state is stored.
	Get(ctx context.Context, botID, scope, ownerID string) (json.RawMessage, error)
	Put(ctx context.Context, botID, scope, ownerID string, data json.RawMessage) error
	// GetTurn returns, in one read, what a turn starts with: its user and
	// conversation (nil when gone) and their states and the bot's (nil
	// when not stored).
	GetTurn(ctx context.Context, botID, userID, conversationID string) (TurnStart, error)
	// GetIdleTurn is GetTurn with, in the same read, whether the
	// conversation is idle and the number of its last turn. A store that
	// can tell a start still holds without reading it gives the start a
	// Mark (not in handoff) for RequireTurnStart.
	GetIdleTurn(ctx context.Context, botID, userID, conversationID string) (IdleTurn, error)
	// RequireTurnStart fails with ErrStartChanged unless the store still
	// holds start as what the user's next turn in the conversation starts
	// with (the user, the conversation, the three states, as GetTurn reads
	// them) and the conversation is not in handoff. In a pipelined
	// transaction it is written to fail in the engine (WithRequiredRow):
	// a Fold's check of a start kept from the last turn, with no answer
	// needed before the COMMIT, which takes the write's last-turn check
	// when offered one (LastTurnOf).
	RequireTurnStart(ctx context.Context, botID, userID, conversationID string, start TurnStart) error
	// LockShared takes, for the rest of the transaction, a lock per key
	// (not the rows: a state not stored yet has none), all in one order:
	// transactions that each lock the states they will write before they
	// write anything never wait for each other in a cycle, whatever
	// order their writes then come in (Write.SharedStates). An engine
	// with one writer at a time (SQLite) needs none and takes none.
	LockShared(ctx context.Context, keys []StateKey) error
}

// IdleTurn is what a turn starts with, read before its message is
// committed (States.GetIdleTurn; the dispatcher's Fold).
type IdleTurn struct {
	Start TurnStart
	// Idle is set when the conversation has no pending turn and is not in
	// handoff: a new turn would be the next to run.
	Idle bool
	// Handoff is set when the conversation is in handoff.
	Handoff bool
	// TurnSeq is the conversation's last turn number (conversations.turn_seq):
	// the next turn enqueued gets TurnSeq+1 unless another came in between.
	TurnSeq int64
}

// TurnStart is what a turn starts with (States.GetTurn).
type TurnStart struct {
	User                 *model.ChatUser
	Conversation         *model.Conversation
	UserState, ConvState json.RawMessage
	BotState             json.RawMessage
	// Mark, set by a store that can tell, lets RequireTurnStart know the
	// start holds without reading it again; zero: it reads.
	Mark StartMark
}

// StartMark is where a start was read in the store's count of the writes
// that may change one (sqlstore's startChanges), with a sum of what it
// held then: a start whose sum no longer matches (changed since it was
// read) is checked by reading.
type StartMark struct{ Changes, Sum uint64 }

// Leases are named, expiring locks shared by every process on the same
// database; they keep a conversation's turns on one process at a time.
//
// Each lease has an epoch that grows by one whenever the lease passes to a
// holder after it expired or was released (never on a renewal). A holder
// that took epoch e commits work done under the lease with a Fence{name,
// holder, e} checked in the same transaction (Check): once another holder
// took the lease over, the check fails with ErrFenced and the transaction
// commits nothing.
type Leases interface {
	// Acquire takes or renews the lease for holder until now+ttl. It returns
	// false when another holder has an unexpired lease.
	Acquire(ctx context.Context, name, holder string, ttl time.Duration) (bool, error)
	// Take is Acquire that also reports the epoch taken and, on a takeover
	// of an expired lease of another holder, whom it was taken from.
	Take(ctx context.Context, name, holder string, ttl time.Duration) (Lease, bool, error)
	// Renew extends holder's lease taken at epoch until now+ttl; false when
	// it was taken over (or released) meanwhile. One UPDATE.
	Renew(ctx context.Context, name, holder string, epoch int64, ttl time.Duration) (bool, error)
	// Release ends holder's lease at once (no-op unless holder holds it);
	// the next Take starts a new epoch.
	Release(ctx context.Context, name, holder string) error
	// Free tells whether the lease is free to take with a write's fence
	// (Fence.Take): never taken (or pruned), or released; and the epoch
	// it has (0: no row), which the fence's must be above. One read.
	Free(ctx context.Context, name string) (free bool, epoch int64, err error)
	// Check, inside a transaction, fails with ErrFenced unless f's holder
	// still holds the lease at f's epoch, and locks the lease row until
	// the transaction ends, so that a takeover waits for it. With f.Renew
	// it also renews the lease (Fence.Renew); with f.Take it takes a free
	// lease instead (Fence.Take).
	Check(ctx context.Context, f Fence) error
	// Prune deletes at most limit leases whose name starts with prefix
	// and that were released or expired before `before`, and reports how
	// many it deleted. Epochs stay monotonic per name across a prune: a
	// lease taken again after its row went starts above every epoch it
	// had, so the fence of a pruned epoch never matches again (nodes'
	// clocks must agree within time.Since(before)).
	Prune(ctx context.Context, prefix string, before time.Time, limit int) (int, error)
}

// Lease is what Leases.Take took.
type Lease struct {
	Epoch int64
	// From is the other holder whose expired lease was taken over, and
	// FromExpired when it expired; empty when the lease was free, released
	// or already ours.
	From        string
	FromExpired time.Time
	// Holder is the current holder when Take was refused.
	Holder string
}

// Fence names a lease at an epoch: a write carrying it commits only while
// its holder still holds that lease at that epoch.
type Fence struct {
	Name   string
	Holder string
	Epoch  int64
	// Renew, when set, makes a passing check also renew the lease until
	// Renew after the check (never a released one): a holder that commits
	// often keeps its lease without renewals of its own.
	Renew time.Duration
	// Take makes the check take the lease instead, until Renew after it:
	// a lease never taken (or pruned) or released becomes Holder's at
	// Epoch, which must be above the epoch it had (the clock's
	// microseconds, as Take starts a new row, or above the epoch Free
	// read); one held by anyone, live
	// or expired, or with an epoch not below Epoch, fails the write with
	// ErrFenced (Take's path then: a takeover is logged there). The
	// write's own commit takes the lease, with no transaction of its own.
	Take bool
}

// ErrTurnBetween is RequireLastTurn's error: another turn was numbered
// after the one expected. A group commit then commits the write without
// its Then (Write.Then).
var ErrTurnBetween = errors.New("another turn of the conversation came first")

// ErrNotParticipant is Chat.RequireParticipant's error.
var ErrNotParticipant = errors.New("not a participant of the conversation")

// ErrStartChanged is RequireTurnStart's error. A group commit then
// commits the write without its Then, as for ErrTurnBetween.
var ErrStartChanged = errors.New("what the turn started with changed")

// TurnRefused tells whether err is a turn's check refusing it
// (ErrTurnBetween, ErrStartChanged): nothing failed, the turn runs again
// in order.
func TurnRefused(err error) bool {
	return errors.Is(err, ErrTurnBetween) || errors.Is(err, ErrStartChanged)
}

// ErrFenced is Check's error: the lease was taken over by another holder.
var ErrFenced = errors.New("lease taken over by another node: write fenced off")
