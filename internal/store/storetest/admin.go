package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

func testAccounts(t *testing.T, db store.DB) {
	ctx := t.Context()
	r := db.Accounts()
	n, err := r.Count(ctx)
	ok(t, err)
	eq(t, "count of empty db", n, 0)

	a := &model.Account{Email: "a@example.com", DisplayName: "A", EmailVerified: true,
		CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 678_901_234, time.FixedZone("x", 3600))}
	ok(t, r.Create(ctx, a))
	if a.ID == "" {
		t.Fatal("Create did not set an id")
	}
	got, err := r.Get(ctx, a.ID)
	ok(t, err)
	eq(t, "account read back as created", got, a)
	if got.CreatedAt.Nanosecond()%int(time.Millisecond) != 0 || got.CreatedAt.Location() != time.UTC {
		t.Fatalf("timestamp not normalised to UTC milliseconds: %v", got.CreatedAt)
	}
	got, err = r.GetByEmail(ctx, "a@example.com")
	ok(t, err)
	eq(t, "by email", got.ID, a.ID)

	wantErr(t, r.Create(ctx, &model.Account{Email: "a@example.com"}), model.ErrAlreadyExists)
	b := newAccount(t, db, "b@example.com")

	_, err = r.Get(ctx, "missing")
	wantErr(t, err, model.ErrNotFound)
	_, err = r.GetByEmail(ctx, "missing@example.com")
	wantErr(t, err, model.ErrNotFound)

	a.DisplayName, a.ProfilePicture, a.EmailVerified = "A2", "pic", false
	ok(t, r.Update(ctx, a))
	got, err = r.Get(ctx, a.ID)
	ok(t, err)
	eq(t, "updated account", got, a)

	b.Email = "a@example.com"
	wantErr(t, r.Update(ctx, b), model.ErrAlreadyExists)
	wantErr(t, r.Update(ctx, &model.Account{ID: "missing", Email: "z@example.com"}), model.ErrNotFound)

	n, err = r.Count(ctx)
	ok(t, err)
	eq(t, "count", n, 2)
}

func testTokens(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	r := db.Tokens()
	pat1 := &model.Token{Kind: model.TokenPAT, AccountID: f.acct.ID, Note: "one", Hash: "h1", CreatedAt: at(1)}
	pat2 := &model.Token{Kind: model.TokenPAT, AccountID: f.acct.ID, Note: "two", Hash: "h2", CreatedAt: at(2)}
	bak := &model.Token{Kind: model.TokenBotKey, BotID: f.bot.ID, WorkspaceID: f.ws.ID, Hash: "h3", CreatedAt: at(3)}
	for _, tk := range []*model.Token{pat1, pat2, bak} {
		ok(t, r.Create(ctx, tk))
	}
	wantErr(t, r.Create(ctx, &model.Token{Kind: model.TokenPAT, AccountID: f.acct.ID, Hash: "h1"}), model.ErrAlreadyExists)

	got, err := r.GetByHash(ctx, "h3")
	ok(t, err)
	eq(t, "by hash", got, bak)
	got, err = r.Get(ctx, pat1.ID)
	ok(t, err)
	eq(t, "by id", got, pat1)
	_, err = r.GetByHash(ctx, "nope")
	wantErr(t, err, model.ErrNotFound)

	pats, err := r.ListByAccount(ctx, f.acct.ID)
	ok(t, err)
	eq(t, "pats newest first", ids(pats, tokID), []string{pat2.ID, pat1.ID})
	baks, err := r.ListByBot(ctx, f.bot.ID)
	ok(t, err)
	eq(t, "bot keys", ids(baks, tokID), []string{bak.ID})

	ok(t, r.Delete(ctx, pat1.ID))
	wantErr(t, r.Delete(ctx, pat1.ID), model.ErrNotFound)
	_, err = r.Get(ctx, pat1.ID)
	wantErr(t, err, model.ErrNotFound)
	pats, err = r.ListByAccount(ctx, f.acct.ID)
	ok(t, err)
	eq(t, "pats after delete", ids(pats, tokID), []string{pat2.ID})
}

func tokID(t *model.Token) string { return t.ID }

func wsID(w *model.Workspace) string { return w.ID }

func testWorkspaces(t *testing.T, db store.DB) {
	ctx := t.Context()
	r := db.Workspaces()
	a := newAccount(t, db, "a@example.com")
	other := newAccount(t, db, "o@example.com")

	w := &model.Workspace{Name: "W", OwnerID: a.ID, Handle: "acme", SocialAccounts: []string{"x", "y"}, SpendingLimit: 12.5,
		IsPublic: true, About: "about", CreatedAt: at(1)}
	ok(t, r.Create(ctx, w))
	ok(t, db.Members().Create(ctx, &model.Member{WorkspaceID: w.ID, AccountID: a.ID, Role: model.RoleOwner}))
	got, err := r.Get(ctx, w.ID)
	ok(t, err)
	eq(t, "workspace", got, w)

	wantErr(t, r.Create(ctx, &model.Workspace{Name: "dup", OwnerID: a.ID, Handle: "acme"}), model.ErrAlreadyExists)
	// Empty handles do not collide.
	e1 := newWorkspace(t, db, a, "", 2)
	e2 := newWorkspace(t, db, a, "", 3)

	newBot(t, db, w, nil, 1)
	newBot(t, db, w, nil, 2)
	newBot(t, db, e1, nil, 3)
	got, err = r.Get(ctx, w.ID)
	ok(t, err)
	eq(t, "bot count", got.BotCount, 2)
	got, err = r.GetByHandle(ctx, "acme")
	ok(t, err)
	eq(t, "by handle", got.ID, w.ID)
	eq(t, "bot count by handle", got.BotCount, 2)
	_, err = r.GetByHandle(ctx, "")
	wantErr(t, err, model.ErrNotFound)
	_, err = r.GetByHandle(ctx, "nope")
	wantErr(t, err, model.ErrNotFound)
	_, err = r.Get(ctx, "nope")
	wantErr(t, err, model.ErrNotFound)

	w.Name, w.Handle, w.SocialAccounts, w.BotCount = "W2", "acme2", nil, 2
	ok(t, r.Update(ctx, w))
	got, err = r.Get(ctx, w.ID)
	ok(t, err)
	eq(t, "updated", got, w)
	e1.Handle = "acme2"
	wantErr(t, r.Update(ctx, e1), model.ErrAlreadyExists)
	wantErr(t, r.Update(ctx, &model.Workspace{ID: "nope", Name: "x"}), model.ErrNotFound)

	// Only workspaces the account is a member of, newest first.
	newWorkspace(t, db, other, "theirs", 4)
	list := collect(t, 2, func(p store.Page) ([]*model.Workspace, string, error) { return r.ListForAccount(ctx, a.ID, "", p) })
	eq(t, "list for account", ids(list, wsID), []string{e2.ID, e1.ID, w.ID})
	eq(t, "bot count in list", list[1].BotCount, 1)
	list, next, err := r.ListForAccount(ctx, a.ID, "acme2", store.Page{})
	ok(t, err)
	eq(t, "filtered by handle", ids(list, wsID), []string{w.ID})
	eq(t, "next token", next, "")
	list, _, err = r.ListForAccount(ctx, a.ID, "theirs", store.Page{})
	ok(t, err)
	eq(t, "not a member", len(list), 0)

	ok(t, r.Delete(ctx, e2.ID))
	wantErr(t, r.Delete(ctx, e2.ID), model.ErrNotFound)
	_, err = r.Get(ctx, e2.ID)
	wantErr(t, err, model.ErrNotFound)
}

func testWorkspaceDelete(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	keep := newWorkspace(t, db, f.acct, "keep", 1)
	ok(t, db.Audit().Record(ctx, &model.AuditRecord{WorkspaceID: f.ws.ID, Action: model.AuditCreateBot}))
	ok(t, db.Audit().Record(ctx, &model.AuditRecord{WorkspaceID: keep.ID, Action: model.AuditCreateBot}))
	ok(t, db.Tokens().Create(ctx, &model.Token{Kind: model.TokenBotKey, BotID: f.bot.ID, WorkspaceID: f.ws.ID, Hash: "k"}))
	c := newConv(t, db, f.bot.ID, "c1", "", 1)
	newMessage(t, db, c, "", 1)
	fill(t, db, f.bot)
	other := newBot(t, db, keep, nil, 2)
	fill(t, db, other)

	ok(t, db.Workspaces().Delete(ctx, f.ws.ID))
	checkBotData(t, db, f.bot, false)
	checkBotData(t, db, other, true)
	ms, _, err := db.Members().List(ctx, f.ws.ID, store.Page{})
	ok(t, err)
	eq(t, "members after workspace delete", len(ms), 0)
	recs, _, err := db.Audit().List(ctx, f.ws.ID, store.Page{})
	ok(t, err)
	eq(t, "audit after workspace delete", len(recs), 0)
	_, err = db.Bots().GetByID(ctx, f.bot.ID)
	wantErr(t, err, model.ErrNotFound)
	_, err = db.Tokens().GetByHash(ctx, "k")
	wantErr(t, err, model.ErrNotFound)
	_, err = db.Chat().GetConversation(ctx, f.bot.ID, "c1")
	wantErr(t, err, model.ErrNotFound)

	// The other workspace is untouched.
	recs, _, err = db.Audit().List(ctx, keep.ID, store.Page{})
	ok(t, err)
	eq(t, "other workspace audit", len(recs), 1)
	ms, _, err = db.Members().List(ctx, keep.ID, store.Page{})
	ok(t, err)
	eq(t, "other workspace members", len(ms), 1)
}

func testMembers(t *testing.T, db store.DB) {
	ctx := t.Context()
	r := db.Members()
	owner := newAccount(t, db, "owner@example.com")
	w := newWorkspace(t, db, owner, "", 0)
	var accts []*model.Account
	var mems []*model.Member
	for i := range 5 {
		a := newAccount(t, db, fmt.Sprintf("m%d@example.com", i))
		m := &model.Member{WorkspaceID: w.ID, AccountID: a.ID, Role: model.RoleViewer, CreatedAt: at(i + 1)}
		ok(t, r.Create(ctx, m))
		accts, mems = append(accts, a), append(mems, m)
	}
	wantErr(t, r.Create(ctx, &model.Member{WorkspaceID: w.ID, AccountID: accts[0].ID, Role: model.RoleViewer}), model.ErrAlreadyExists)

	got, err := r.Get(ctx, w.ID, mems[0].ID)
	ok(t, err)
	eq(t, "display name from account", got.DisplayName, accts[0].DisplayName)
	eq(t, "picture from account", got.ProfilePicture, accts[0].ProfilePicture)
	eq(t, "email from account", got.Email, accts[0].Email)
	eq(t, "role", got.Role, model.RoleViewer)
	eq(t, "created", got.CreatedAt, at(1))

	// Account changes show through.
	accts[0].DisplayName = "Renamed"
	ok(t, db.Accounts().Update(ctx, accts[0]))
	got, err = r.GetByAccount(ctx, w.ID, accts[0].ID)
	ok(t, err)
	eq(t, "renamed", got.DisplayName, "Renamed")
	eq(t, "same member", got.ID, mems[0].ID)

	other := newWorkspace(t, db, owner, "", 9)
	_, err = r.Get(ctx, other.ID, mems[0].ID)
	wantErr(t, err, model.ErrNotFound)
	_, err = r.GetByAccount(ctx, other.ID, accts[0].ID)
	wantErr(t, err, model.ErrNotFound)

	ok(t, r.UpdateRole(ctx, w.ID, mems[1].ID, model.RoleAdministrator))
	got, err = r.Get(ctx, w.ID, mems[1].ID)
	ok(t, err)
	eq(t, "updated role", got.Role, model.RoleAdministrator)
	wantErr(t, r.UpdateRole(ctx, other.ID, mems[1].ID, model.RoleOwner), model.ErrNotFound)

	n, err := r.CountRole(ctx, w.ID, model.RoleViewer)
	ok(t, err)
	eq(t, "viewers", n, 4)
	n, err = r.CountRole(ctx, w.ID, model.RoleOwner)
	ok(t, err)
	eq(t, "owners", n, 1)

	list := collect(t, 2, func(p store.Page) ([]*model.Member, string, error) { return r.List(ctx, w.ID, p) })
	want := []string{}
	for _, m := range mems {
		want = append(want, m.ID)
	}
	eq(t, "oldest first, owner first", len(list), 6)
	eq(t, "owner first", list[0].AccountID, owner.ID)
	eq(t, "members in order", ids(list[1:], func(m *model.Member) string { return m.ID }), want)

	ok(t, r.Delete(ctx, w.ID, mems[2].ID))
	wantErr(t, r.Delete(ctx, w.ID, mems[2].ID), model.ErrNotFound)
	wantErr(t, r.Delete(ctx, other.ID, mems[3].ID), model.ErrNotFound)
	_, err = r.Get(ctx, w.ID, mems[2].ID)
	wantErr(t, err, model.ErrNotFound)
}

func testAudit(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	other := newWorkspace(t, db, f.acct, "", 1)
	var want []string
	for i := range 7 {
		r := &model.AuditRecord{WorkspaceID: f.ws.ID, RecordedAt: at(i), AccountID: f.acct.ID, Email: f.acct.Email,
			Action: model.AuditUpdateBot, ResourceID: f.bot.ID, ResourceName: "bot", Value: fmt.Sprint(i)}
		ok(t, db.Audit().Record(ctx, r))
		want = append([]string{r.ID}, want...)
	}
	ok(t, db.Audit().Record(ctx, &model.AuditRecord{WorkspaceID: other.ID, Action: model.AuditUnknown}))
	list := collect(t, 3, func(p store.Page) ([]*model.AuditRecord, string, error) { return db.Audit().List(ctx, f.ws.ID, p) })
	eq(t, "audit newest first", ids(list, func(r *model.AuditRecord) string { return r.ID }), want)
	eq(t, "fields", list[0].Value, "6")
	eq(t, "action", list[0].Action, model.AuditUpdateBot)
	eq(t, "time", list[0].RecordedAt, at(6))
}
