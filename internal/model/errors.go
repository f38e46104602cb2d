// Package model holds Parley's domain types, their validation and the error
// vocabulary shared by every layer. It imports only the standard library.
package model

import (
	"errors"
	"fmt"
)

// ErrorType is one of the Botpress error type names. The official clients
// pick the error class from this string alone, so it is part of the wire
// contract; httpx maps each one to its HTTP status.
type ErrorType string

const (
	ErrInternal         ErrorType = "Internal"
	ErrUnauthorized     ErrorType = "Unauthorized"
	ErrForbidden        ErrorType = "Forbidden"
	ErrPayloadTooLarge  ErrorType = "PayloadTooLarge"
	ErrInvalidPayload   ErrorType = "InvalidPayload"
	ErrUnsupportedMedia ErrorType = "UnsupportedMediaType"
	ErrMethodNotFound   ErrorType = "MethodNotFound"
	ErrNotFound         ErrorType = "ResourceNotFound"
	ErrInvalidQuery     ErrorType = "InvalidQuery"
	ErrAlreadyExists    ErrorType = "AlreadyExists"
	ErrRelationConflict ErrorType = "RelationConflict"
	ErrRuntime          ErrorType = "Runtime"
	ErrLimitExceeded    ErrorType = "LimitExceeded"
	ErrRateLimited      ErrorType = "RateLimited"
	ErrTimeout          ErrorType = "OperationTimeout"
	// ErrUnavailable is Parley's own (502): a process Parley calls for the
	// caller (an integration running an action) could not be reached or
	// failed in the middle. The SDK's clients retry a 502.
	ErrUnavailable ErrorType = "Unavailable"
	// ErrServiceUnavailable is Parley's own too (503, with Retry-After):
	// its database is unavailable for now (store.Store.Transient: a
	// refused connection, PostgreSQL restarting, SQLite's write lock held
	// past its timeout). The call may be retried.
	ErrServiceUnavailable ErrorType = "ServiceUnavailable"
)

// Error is an error meant to be shown to the caller. Anything that is not an
// *Error reaching the HTTP layer is reported as Internal with a generic text.
type Error struct {
	Type     ErrorType
	Message  string
	Metadata map[string]any
}

func (e *Error) Error() string { return string(e.Type) + ": " + e.Message }

// Errorf builds an *Error of the given type.
func Errorf(t ErrorType, format string, args ...any) *Error {
	return &Error{Type: t, Message: fmt.Sprintf(format, args...)}
}

// Invalid reports bad input (400 InvalidPayload).
func Invalid(format string, args ...any) *Error { return Errorf(ErrInvalidPayload, format, args...) }

// NotFound reports an unknown resource (404).
func NotFound(what string) *Error { return Errorf(ErrNotFound, "%s not found", what) }

// Forbidden reports a caller that lacks permission (403).
func Forbidden(format string, args ...any) *Error { return Errorf(ErrForbidden, format, args...) }

// Unauthorized reports a missing or bad credential (401).
func Unauthorized(format string, args ...any) *Error {
	return Errorf(ErrUnauthorized, format, args...)
}

// Conflict reports a duplicate (409 AlreadyExists).
func Conflict(format string, args ...any) *Error { return Errorf(ErrAlreadyExists, format, args...) }

// TypeOf returns the ErrorType of err, or ErrInternal when err carries none.
func TypeOf(err error) ErrorType {
	var e *Error
	if errors.As(err, &e) {
		return e.Type
	}
	return ErrInternal
}

// IsNotFound reports whether err is a ResourceNotFound error.
func IsNotFound(err error) bool { return err != nil && TypeOf(err) == ErrNotFound }
