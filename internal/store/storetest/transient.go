package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// TransientCase is a real error of an engine and whether
// store.Store.Transient must call it the database being unavailable.
type TransientCase struct {
	Name string
	Err  error
	Want bool
}

// CheckTransient checks db.Transient on the engine's own cases, then on
// errors no engine may call transient: a bad statement, a unique
// violation, a cancelled context, a passed deadline, none.
func CheckTransient(t *testing.T, db store.DB, raw *sql.DB, cases []TransientCase) {
	t.Helper()
	ctx := context.Background()
	_, syntaxErr := raw.ExecContext(ctx, "SELEC 1")
	a := &model.Account{Email: "twice@example.com"}
	if err := db.Accounts().Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	dup := db.Accounts().Create(ctx, &model.Account{ID: a.ID, Email: "twice@example.com"})
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, cancelledErr := raw.ExecContext(cancelled, "SELECT 1")
	expired, cancel2 := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel2()
	_, expiredErr := raw.ExecContext(expired, "SELECT 1")
	for _, tc := range append(cases,
		TransientCase{"syntax error", syntaxErr, false},
		TransientCase{"unique violation", dup, false},
		TransientCase{"cancelled", cancelledErr, false},
		TransientCase{"past its deadline", expiredErr, false},
		TransientCase{"nil", nil, false},
	) {
		if tc.Err == nil && tc.Want {
			t.Fatalf("%s: no error", tc.Name)
		}
		if got := db.Transient(tc.Err); got != tc.Want {
			t.Errorf("%s (%v): Transient = %v, want %v", tc.Name, tc.Err, got, tc.Want)
		}
	}
	// Wrapped, an engine's transient error stays transient.
	for _, tc := range cases {
		if tc.Want && !db.Transient(fmt.Errorf("reading: %w", tc.Err)) {
			t.Errorf("%s, wrapped: not transient", tc.Name)
		}
	}
}
