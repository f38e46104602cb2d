// Package httpx is the HTTP plumbing shared by Parley's APIs: the one table
// from error types to statuses, the standard error body, JSON decoding with
// size limits and field-naming messages, and middleware.
package httpx

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

// statusOf is the only place an error type becomes an HTTP status. Types
// not listed are reported as 500.
var statusOf = map[model.ErrorType]int{
	model.ErrInternal:           http.StatusInternalServerError,
	model.ErrUnauthorized:       http.StatusUnauthorized,
	model.ErrForbidden:          http.StatusForbidden,
	model.ErrPayloadTooLarge:    http.StatusRequestEntityTooLarge,
	model.ErrInvalidPayload:     http.StatusBadRequest,
	model.ErrUnsupportedMedia:   http.StatusUnsupportedMediaType,
	model.ErrMethodNotFound:     http.StatusMethodNotAllowed,
	model.ErrNotFound:           http.StatusNotFound,
	model.ErrInvalidQuery:       http.StatusBadRequest,
	model.ErrAlreadyExists:      http.StatusConflict,
	model.ErrRelationConflict:   http.StatusConflict,
	model.ErrRuntime:            http.StatusBadRequest,
	model.ErrLimitExceeded:      http.StatusRequestEntityTooLarge,
	model.ErrRateLimited:        http.StatusTooManyRequests,
	model.ErrTimeout:            http.StatusGatewayTimeout,
	model.ErrUnavailable:        http.StatusBadGateway,
	model.ErrServiceUnavailable: http.StatusServiceUnavailable,
}

// Status returns the HTTP status for err.
func Status(err error) int {
	if s, ok := statusOf[model.TypeOf(err)]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// ErrorBody is the standard error body the Botpress clients understand,
// plus requestId: the request's X-Request-Id, which names it in the server
// log (the clients ignore fields they do not know).
type ErrorBody struct {
	ID        string         `json:"id"`
	Code      int            `json:"code"`
	Type      string         `json:"type"`
	Message   string         `json:"message"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	RequestID string         `json:"requestId,omitempty"`
}

// NewErrorID returns an id of the form the clients generate themselves:
// err_<yyyymmddhhmmss>x<8 hex>.
func NewErrorID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "err_" + time.Now().UTC().Format("20060102150405") + "x" + hex.EncodeToString(b[:])
}

// BodyFor builds the error body for err. Anything that is not a model.Error
// becomes a generic Internal error: internals never reach the caller.
func BodyFor(err error) ErrorBody {
	body := ErrorBody{ID: NewErrorID(), Code: Status(err)}
	var e *model.Error
	if errors.As(err, &e) && statusOf[e.Type] != 0 {
		body.Type, body.Message, body.Metadata = string(e.Type), e.Message, e.Metadata
		return body
	}
	body.Code = http.StatusInternalServerError
	body.Type = string(model.ErrInternal)
	body.Message = "An internal error occurred; it has been logged with id " + body.ID
	return body
}

// WriteError writes err as the standard error body. Server-side failures are
// logged in full with the error id the caller sees.
//
// An error the request's AccessLog tells is the database being
// unavailable for now is answered 503 ServiceUnavailable with
// Retry-After, not 500: the client (or a proxy, or axios-retry) may retry
// the same call once the database is back.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	body := BodyFor(err)
	body.RequestID = RequestID(r.Context())
	if info := infoOf(r.Context()); body.Code == http.StatusInternalServerError && info != nil && info.unavailable != nil && info.unavailable(err) {
		body.Code, body.Type = http.StatusServiceUnavailable, string(model.ErrServiceUnavailable)
		body.Message = "The database is unavailable for now; retry in a moment (logged with id " + body.ID + ")"
	}
	if body.Code >= 500 {
		Logger(r.Context()).Error("request failed", "error_id", body.ID, "err", err, "method", r.Method, "path", r.URL.Path)
	}
	switch body.Code {
	case http.StatusTooManyRequests:
		retry := "1"
		if n, ok := body.Metadata["retryAfter"].(int); ok && n > 0 {
			retry = strconv.Itoa(n)
		}
		w.Header().Set("Retry-After", retry)
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	WriteJSON(w, body.Code, body)
}

// Logger returns the request's logger (set by the access-log middleware).
func Logger(ctx interface{ Value(any) any }) *slog.Logger {
	if info := infoOf(ctx); info != nil && info.base != nil {
		return info.logger()
	}
	return slog.Default()
}
