// Package auth issues and checks Parley's credentials: hashed admin tokens
// and the HS256 user keys of the Chat API.
package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/golang-jwt/jwt/v5"
)

// HashToken returns the stored form of a token secret. Tokens carry 160
// random bits, so a plain SHA-256 (no salt, no stretching) is enough and
// keeps lookups a single indexed read.
func HashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Token prefixes make leaked secrets easy to recognise.
const (
	PATPrefix    = "bp_pat_"
	BotKeyPrefix = "bp_bak_"
)

// ErrInvalidUserKey is returned for any user key that does not verify.
var ErrInvalidUserKey = errors.New("invalid user key")

type userClaims struct {
	ID string `json:"id"`
	jwt.RegisteredClaims
}

// SignUserKey issues a Chat API user key: an HS256 JWT with the claim id,
// signed with the integration's encryption key, exactly as the official
// client signs keys itself (no expiry).
func SignUserKey(encryptionKey, userID string) (string, error) {
	claims := jwt.MapClaims{"id": userID, "iat": jwt.NewNumericDate(nowFunc())}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(encryptionKey))
}

// VerifyUserKey checks a user key and returns its id claim. Only HS256 is
// accepted: alg "none", other algorithms, a wrong key, a malformed token or
// a missing or non-string id all fail. Expiry is enforced only when present.
func VerifyUserKey(encryptionKey, key string) (string, error) {
	var claims userClaims
	_, err := jwt.ParseWithClaims(key, &claims, func(*jwt.Token) (any, error) {
		return []byte(encryptionKey), nil
	}, jwt.WithValidMethods([]string{"HS256"}))
	if err != nil || claims.ID == "" {
		return "", ErrInvalidUserKey
	}
	return claims.ID, nil
}
