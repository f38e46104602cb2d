package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"sync/atomic"
)

// RequestIDHeader carries a request's id, in and out.
const RequestIDHeader = "X-Request-Id"

// requestInfo is what AccessLog tells the rest of a request through its
// context, in one value: its id, its logger, and which errors are the
// database being unavailable for now.
type requestInfo struct {
	id          string
	base        *slog.Logger // AccessLog's
	log         atomic.Pointer[slog.Logger]
	unavailable func(error) bool
}

// logger is the request's logger, base with its id: made on first use,
// since most requests log nothing but their access line (a logger With an
// attribute per request took 0.7 % of the server's CPU in the chat
// pipeline's closed loop). The request's goroutines may race to make it:
// one wins.
func (i *requestInfo) logger() *slog.Logger {
	if l := i.log.Load(); l != nil {
		return l
	}
	i.log.CompareAndSwap(nil, i.base.With(slog.String("request_id", i.id)))
	return i.log.Load()
}

type requestInfoKey struct{}

func infoOf(ctx interface{ Value(any) any }) *requestInfo {
	info, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return info
}

// RequestID returns the id of the request ctx belongs to ("" outside one).
func RequestID(ctx context.Context) string {
	if info := infoOf(ctx); info != nil {
		return info.id
	}
	return ""
}

// requestIDFor keeps a sane incoming X-Request-Id (1 to 128 characters of
// letters, digits and -_.:) and generates one otherwise.
func requestIDFor(r *http.Request) string {
	if id := r.Header.Get(RequestIDHeader); saneRequestID(id) {
		return id
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	var id [len("req_") + 2*len(b)]byte // on the stack: the string is the one allocation
	hex.Encode(id[copy(id[:], "req_"):], b[:])
	return string(id[:])
}

func saneRequestID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}
