package auth

import (
	"encoding/base64"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

func TestVerifyUserKey(t *testing.T) {
	const secret = "s3cret"
	good, err := SignUserKey(secret, "user-1")
	if err != nil {
		t.Fatal(err)
	}
	wrongKey, _ := SignUserKey("other", "user-1")
	hs512, _ := jwt.NewWithClaims(jwt.SigningMethodHS512, jwt.MapClaims{"id": "user-1"}).SignedString([]byte(secret))
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"id": "user-1"}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	numericID, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"id": 42}).SignedString([]byte(secret))
	noID, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "x"}).SignedString([]byte(secret))
	expired, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"id": "u", "exp": 1}).SignedString([]byte(secret))
	forgedHeader := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." +
		base64.RawURLEncoding.EncodeToString([]byte(`{"id":"user-1"}`)) + "."

	tests := []struct {
		name, key, want string
		ok              bool
	}{
		{"issued key", good, "user-1", true},
		{"wrong key", wrongKey, "", false},
		{"other algorithm", hs512, "", false},
		{"alg none", none, "", false},
		{"forged alg none", forgedHeader, "", false},
		{"numeric id", numericID, "", false},
		{"missing id", noID, "", false},
		{"expired", expired, "", false},
		{"malformed", "not-a-jwt", "", false},
		{"empty", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := VerifyUserKey(secret, tt.key)
			if tt.ok != (err == nil) || got != tt.want {
				t.Fatalf("VerifyUserKey = %q, %v; want %q ok=%v", got, err, tt.want, tt.ok)
			}
		})
	}
}
