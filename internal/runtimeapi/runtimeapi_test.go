package runtimeapi

import (
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

func TestRequire(t *testing.T) {
	for _, tc := range []struct {
		caller *Caller
		op     string
		want   bool
	}{
		{BotCaller("b"), "deleteConversation", true},
		{&Caller{Kind: KindMember, Role: model.RoleViewer}, "getUser", true},
		{&Caller{Kind: KindMember, Role: model.RoleBilling}, "listMessages", true},
		{&Caller{Kind: KindMember, Role: model.RoleViewer}, "createMessage", false},
		{&Caller{Kind: KindMember, Role: model.RoleBilling}, "setState", false},
		{&Caller{Kind: KindMember, Role: model.RoleDeveloper}, "setState", true},
		{&Caller{Kind: KindMember, Role: model.RoleOwner}, "callAction", true},
		{&Caller{Kind: KindMember, Role: "nobody"}, "getUser", false},
	} {
		err := tc.caller.require(tc.op)
		if (err == nil) != tc.want {
			t.Errorf("%+v %s: err = %v, want allowed=%v", tc.caller, tc.op, err, tc.want)
		}
		if err != nil && model.TypeOf(err) != model.ErrForbidden {
			t.Errorf("%s: error type %s", tc.op, model.TypeOf(err))
		}
	}
}

func TestTagPatch(t *testing.T) {
	v := "new"
	empty := ""
	got := TagPatch{"a": nil, "b": &v, "c": &empty}.apply(map[string]string{"a": "1", "c": "3", "d": "4"})
	want := map[string]string{"b": "new", "d": "4"}
	if len(got) != len(want) || got["b"] != "new" || got["d"] != "4" {
		t.Fatalf("apply = %v, want %v", got, want)
	}
}

func TestScheduleDue(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	delay, neg, both := int64(1500), int64(-1), "2025-01-02T00:00:00Z"
	for _, tc := range []struct {
		s    Schedule
		want time.Time
		err  bool
	}{
		{Schedule{Delay: &delay}, now.Add(1500 * time.Millisecond), false},
		{Schedule{DateTime: &both}, now.Add(24 * time.Hour), false},
		{Schedule{Delay: &neg}, time.Time{}, true},
		{Schedule{Delay: &delay, DateTime: &both}, time.Time{}, true},
		{Schedule{}, time.Time{}, true},
	} {
		got, err := tc.s.due(now)
		if (err != nil) != tc.err || !got.Equal(tc.want) {
			t.Errorf("%+v: due = %v, %v", tc.s, got, err)
		}
	}
}

func TestStoredPayload(t *testing.T) {
	for _, tc := range []struct {
		typ, payload, want string
		err                bool
	}{
		{"text", `{"text":"hi"}`, `{"type":"text","text":"hi"}`, false},
		{"text", `{"text":""}`, "", true},
		{"custom", `{"x":1}`, `{"type":"custom","x":1}`, false},
		{"", `{}`, "", true},
		{"text", `"hi"`, "", true},
	} {
		got, err := storedPayload(tc.typ, []byte(tc.payload))
		if (err != nil) != tc.err || (!tc.err && string(got) != tc.want) {
			t.Errorf("%s %s: %s, %v", tc.typ, tc.payload, got, err)
		}
	}
}
