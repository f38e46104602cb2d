package auth

import (
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzVerifyUserKey: any string as a user key never panics and either
// verifies to a non-empty id or fails with ErrInvalidUserKey; a key signed
// for an id verifies to that id, and not under another secret.
func FuzzVerifyUserKey(f *testing.F) {
	good, _ := SignUserKey("secret", "user_1")
	for _, k := range []string{good, "", "a.b.c", "eyJhbGciOiJub25lIn0.eyJpZCI6IngifQ.", good + "x", "....", "eyJ.eyJ.x"} {
		f.Add("secret", k, "user_1")
	}
	f.Fuzz(func(t *testing.T, secret, key, id string) {
		got, err := VerifyUserKey(secret, key)
		if err != nil && !errors.Is(err, ErrInvalidUserKey) {
			t.Fatalf("VerifyUserKey(%q, %q): error %v", secret, key, err)
		}
		if err == nil && got == "" {
			t.Fatalf("VerifyUserKey(%q, %q): empty id", secret, key)
		}
		if secret == "" || id == "" || !utf8.ValidString(id) {
			return // JSON carries only valid UTF-8: ids are made by the server
		}
		signed, err := SignUserKey(secret, id)
		if err != nil {
			t.Fatalf("SignUserKey: %v", err)
		}
		if got, err := VerifyUserKey(secret, signed); err != nil || got != id {
			t.Fatalf("round trip of %q: %q, %v", id, got, err)
		}
		if other := secret + "x"; true {
			if _, err := VerifyUserKey(other, signed); err == nil {
				t.Fatalf("a key signed with %q verifies with %q", secret, other)
			}
		}
	})
}
