// Package storetest is the conformance suite every store.DB must pass.
// Engine packages run it from their tests:
//
//	func TestStore(t *testing.T) { storetest.Run(t, func(t *testing.T) store.DB { return testdb.SQLite(t) }) }
package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Run runs the suite; open must return a fresh, empty, migrated database
// for each call (and clean it up itself).
func Run(t *testing.T, open func(t *testing.T) store.DB) {
	tests := []struct {
		name string
		fn   func(t *testing.T, db store.DB)
	}{
		{"Accounts", testAccounts},
		{"Tokens", testTokens},
		{"Workspaces", testWorkspaces},
		{"WorkspaceDeleteCascades", testWorkspaceDelete},
		{"Members", testMembers},
		{"Bots", testBots},
		{"BotListFilters", testBotList},
		{"Integrations", testIntegrations},
		{"IntegrationDefs", testIntegrationDefs},
		{"Versions", testVersions},
		{"Audit", testAudit},
		{"Logs", testLogs},
		{"Issues", testIssues},
		{"Pagination", testPagination},
		{"PaginationStableWhileInserting", testPaginationStable},
		{"ChatUsers", testChatUsers},
		{"Conversations", testConversations},
		{"Participants", testParticipants},
		{"Messages", testMessages},
		{"Events", testEvents},
		{"Signals", testSignals},
		{"SignalsConcurrent", testSignalsConcurrent},
		{"Limits", testLimits},
		{"SignalTurn", testSignalTurn},
		{"Turns", testTurns},
		{"TurnInputs", testTurnInputs},
		{"IdleTurn", testIdleTurn},
		{"WriteThen", testWriteThen},
		{"WriteThenChecks", testWriteThenChecks},
		{"UnstoredTurn", testUnstoredTurn},
		{"RequireTurnStart", testRequireTurnStart},
		{"RequireFirstTurn", testRequireFirstTurn},
		{"States", testStates},
		{"SharedStates", testSharedStates},
		{"Leases", testLeases},
		{"LeasePrune", testLeasePrune},
		{"FenceRenews", testFenceRenews},
		{"FenceLocks", testFenceLocks},
		{"TakeCancelled", testTakeCancelled},
		{"FenceTakes", testFenceTakes},
		{"DialogTimeouts", testDialogTimeouts},
		{"ScheduleFires", testScheduleFires},
		{"Deliveries", testDeliveries},
		{"Files", testFiles},
		{"FilesAPI", testFilesAPI},
		{"Feedback", testFeedback},
		{"Committer", testCommitter},
		{"InTx", testInTx},
		{"BotIsolation", testBotIsolation},
		{"BotDeleteCascades", testBotDelete},
		{"DeleteWhileWriting", testDeleteWhileWriting},
		{"ConcurrentWrites", testConcurrentWrites},
		{"Lifecycle", testLifecycle},
		{"RuntimeTags", testRuntimeTags},
		{"RuntimeEvents", testRuntimeEvents},
		{"RuntimeStates", testRuntimeStates},
		{"WorkflowsTasksAnalytics", testWorkflowsTasksAnalytics},
		{"Handoffs", testHandoffs},
		{"Activity", testActivity},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

// ---- helpers

// base is a fixed millisecond time so ordering tests do not depend on the
// clock.
var base = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func at(i int) time.Time { return base.Add(time.Duration(i) * time.Millisecond) }

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func wantErr(t *testing.T, err error, want model.ErrorType) {
	t.Helper()
	if err == nil {
		t.Fatalf("want %s error, got nil", want)
	}
	var e *model.Error
	if !errors.As(err, &e) || e.Type != want {
		t.Fatalf("want %s error, got %v", want, err)
	}
}

func eq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func newAccount(t *testing.T, db store.Store, email string) *model.Account {
	t.Helper()
	a := &model.Account{Email: email, DisplayName: "Name " + email, ProfilePicture: "https://p/" + email}
	ok(t, db.Accounts().Create(t.Context(), a))
	return a
}

func newWorkspace(t *testing.T, db store.Store, owner *model.Account, handle string, i int) *model.Workspace {
	t.Helper()
	w := &model.Workspace{Name: "ws " + handle, OwnerID: owner.ID, Handle: handle, CreatedAt: at(i)}
	ok(t, db.Workspaces().Create(t.Context(), w))
	ok(t, db.Members().Create(t.Context(), &model.Member{WorkspaceID: w.ID, AccountID: owner.ID, Role: model.RoleOwner, CreatedAt: at(i)}))
	return w
}

func newBot(t *testing.T, db store.Store, w *model.Workspace, tags map[string]string, i int) *model.Bot {
	t.Helper()
	b := &model.Bot{WorkspaceID: w.ID, Name: fmt.Sprintf("bot%d", i), Tags: tags, Type: model.DefaultBotType, CreatedAt: at(i), UpdatedAt: at(i)}
	ok(t, db.Bots().Create(t.Context(), b))
	return b
}

// fixture is an account, a workspace and a bot.
type fixture struct {
	acct *model.Account
	ws   *model.Workspace
	bot  *model.Bot
}

func setup(t *testing.T, db store.Store) fixture {
	t.Helper()
	a := newAccount(t, db, "owner@example.com")
	w := newWorkspace(t, db, a, "", 0)
	return fixture{a, w, newBot(t, db, w, nil, 0)}
}

func newUser(t *testing.T, db store.Store, botID, id string) *model.ChatUser {
	t.Helper()
	u := &model.ChatUser{BotID: botID, ID: id, Name: "user " + id}
	ok(t, db.Chat().CreateUser(t.Context(), u))
	return u
}

func newConv(t *testing.T, db store.Store, botID, id, owner string, i int) *model.Conversation {
	t.Helper()
	c := &model.Conversation{BotID: botID, ID: id, OwnerID: owner, CreatedAt: at(i)}
	ok(t, db.Chat().CreateConversation(t.Context(), c))
	return c
}

func newMessage(t *testing.T, db store.Store, c *model.Conversation, user string, i int) *model.Message {
	t.Helper()
	m := &model.Message{BotID: c.BotID, ConversationID: c.ID, UserID: user, Payload: json.RawMessage(fmt.Sprintf(`{"text":"m%d"}`, i)),
		Direction: model.DirectionIncoming, CreatedAt: at(i)}
	ok(t, db.Chat().CreateMessage(t.Context(), m))
	return m
}

// collect walks every page of a list and returns all items.
func collect[T any](t *testing.T, size int, fetch func(store.Page) ([]T, string, error)) []T {
	t.Helper()
	var all []T
	p := store.Page{Size: size}
	for i := 0; ; i++ {
		if i > 1000 {
			t.Fatal("pagination does not end")
		}
		items, next, err := fetch(p)
		ok(t, err)
		all = append(all, items...)
		if next == "" {
			return all
		}
		if len(items) == 0 {
			t.Fatal("empty page with a next token")
		}
		p.Token = next
	}
}

func ids[T any](items []T, id func(T) string) []string {
	out := make([]string, len(items))
	for i, v := range items {
		out[i] = id(v)
	}
	return out
}

func msgID(m *model.Message) string { return m.ID }
