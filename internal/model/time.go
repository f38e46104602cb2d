package model

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/hex"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Now returns the current UTC time truncated to milliseconds: every stored
// timestamp is written at that precision so that what a create call returns
// is byte-for-byte what later reads return.
func Now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// FormatTime renders t as the wire format: RFC 3339, UTC, milliseconds, "Z".
func FormatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// FromMillis converts Unix milliseconds (the storage form) to a UTC time.
func FromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// NewID returns a new time-ordered identifier (UUIDv7, 36 characters), the
// length the Botpress clients and validators expect for ids.
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

// NewSecret returns a random URL-safe secret with the given prefix, carrying
// 160 bits of entropy.
func NewSecret(prefix string) string {
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// NewNodeID names this process among the nodes sharing a database: the
// holder of its store leases and the sender of its broker announcements.
func NewNodeID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return "node-" + hex.EncodeToString(b[:])
}
