// Package fault holds the one error type of the platform. Every error a user may
// see carries one of the spec's codes; anything else is an internal error, logged
// and never shown.
package fault

import (
	"errors"
	"fmt"
	"net/http"
)

// Code is a machine-readable error code of the API (spec §7, CONTRACT §2).
type Code string

// The error codes of the API.
const (
	Validation        Code = "VALIDATION_ERROR"
	InvalidURL        Code = "INVALID_URL"
	SlugReserved      Code = "SLUG_RESERVED"
	SlugExists        Code = "SLUG_EXISTS"
	InvalidExpiration Code = "INVALID_EXPIRATION"
	PasswordTooShort  Code = "PASSWORD_TOO_SHORT"
	DomainNotVerified Code = "DOMAIN_NOT_VERIFIED"
	DomainExists      Code = "DOMAIN_EXISTS"
	Unauthorized      Code = "UNAUTHORIZED"
	LimitReached      Code = "LIMIT_REACHED"
	Forbidden         Code = "FORBIDDEN"
	NotFound          Code = "NOT_FOUND"
	MethodNotAllowed  Code = "METHOD_NOT_ALLOWED"
	PayloadTooLarge   Code = "PAYLOAD_TOO_LARGE"
	RateLimited       Code = "RATE_LIMITED"
	Internal          Code = "INTERNAL_ERROR"
	// PaymentProcessor: the payment processor (Stripe) refused a request or
	// could not be reached; the message says which, and why.
	PaymentProcessor Code = "PAYMENT_PROCESSOR_ERROR"

	// IdempotencyKeyReused: an Idempotency-Key sent again with another
	// request (method, path or body) than the one it was first used with.
	IdempotencyKeyReused Code = "IDEMPOTENCY_KEY_REUSED"
	// IdempotencyKeyInUse: an Idempotency-Key whose first request is still
	// being processed (Stripe answers 409 too); retry after a moment.
	IdempotencyKeyInUse Code = "IDEMPOTENCY_KEY_IN_USE"

	// Conflict: the resource kept changing under the request (other writes
	// landed between its read and its write, again and again); nothing was
	// changed, and the same request may be sent again. The spec names no
	// code for it; docs/api.md documents this one.
	Conflict Code = "CONFLICT"

	// Unavailable: a store the request needs cannot be reached (the
	// database restarting, say); the same request may be sent again after
	// Retry-After seconds. Nothing was done, unless the connection broke
	// during a commit. The spec names no code for it; docs/api.md
	// documents this one.
	Unavailable Code = "SERVICE_UNAVAILABLE"

	// LastOwner: the change would leave a workspace without an owner
	// (CONTRACT §13, docs/teams.md).
	LastOwner Code = "LAST_OWNER"
	// MemberExists: the user is a member of the workspace already, or a
	// new account's email is taken.
	MemberExists Code = "MEMBER_EXISTS"
	// InviteExpired: the invite's link is past its expiry (410 Gone).
	InviteExpired Code = "INVITE_EXPIRED"
)

// statuses maps every code to its HTTP status; a code missing here is a bug and
// answers 500.
var statuses = map[Code]int{
	Validation:        http.StatusBadRequest,
	InvalidURL:        http.StatusBadRequest,
	SlugReserved:      http.StatusBadRequest,
	InvalidExpiration: http.StatusBadRequest,
	PasswordTooShort:  http.StatusBadRequest,
	DomainNotVerified: http.StatusBadRequest,
	Unauthorized:      http.StatusUnauthorized,
	LimitReached:      http.StatusPaymentRequired,
	Forbidden:         http.StatusForbidden,
	NotFound:          http.StatusNotFound,
	MethodNotAllowed:  http.StatusMethodNotAllowed,
	SlugExists:        http.StatusConflict,
	DomainExists:      http.StatusConflict,
	PayloadTooLarge:   http.StatusRequestEntityTooLarge,
	RateLimited:       http.StatusTooManyRequests,
	Internal:          http.StatusInternalServerError,
	PaymentProcessor:  http.StatusBadGateway,
	Unavailable:       http.StatusServiceUnavailable,

	// Idempotency-Key conflicts (docs/api.md).
	IdempotencyKeyReused: http.StatusConflict,
	IdempotencyKeyInUse:  http.StatusConflict,

	// Writes that raced others too often (docs/api.md).
	Conflict: http.StatusConflict,
	// Members and invites (docs/teams.md).
	LastOwner:     http.StatusConflict,
	MemberExists:  http.StatusConflict,
	InviteExpired: http.StatusGone,
}

// Status returns the HTTP status of a code.
func (c Code) Status() int {
	if s, ok := statuses[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Error is an error a user may see: a code, a human message and, for input
// errors, the offending fields with a message each.
type Error struct {
	Code    Code
	Message string
	// Fields maps each offending input field to what is wrong with it.
	Fields map[string]string
}

// Error implements error.
func (e *Error) Error() string {
	if len(e.Fields) == 0 {
		return fmt.Sprintf("%s: %s", e.Code, e.Message)
	}
	return fmt.Sprintf("%s: %s %v", e.Code, e.Message, e.Fields)
}

// New returns an error with a code and a message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Field returns an error with a code about one input field.
func Field(code Code, field, message string) *Error {
	return &Error{Code: code, Message: field + ": " + message, Fields: map[string]string{field: message}}
}

// NotFoundf returns a NOT_FOUND error for a kind of resource ("link not found").
func NotFoundf(kind string) *Error {
	return &Error{Code: NotFound, Message: kind + " not found"}
}

// CodeOf returns the code of err, or Internal when err carries none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// As returns the *Error inside err, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Is reports whether err carries code.
func Is(err error, code Code) bool {
	return CodeOf(err) == code
}

// FieldErrors collects input errors field by field, each with the code it would
// raise on its own.
type FieldErrors struct {
	list []fieldError
}

type fieldError struct {
	code           Code
	field, message string
}

// Add records an error on a field. The first error of a field wins.
func (f *FieldErrors) Add(code Code, field, message string) {
	for _, e := range f.list {
		if e.field == field {
			return
		}
	}
	f.list = append(f.list, fieldError{code, field, message})
}

// Err returns nil when nothing was added. Otherwise it returns one error whose
// code is the first specific code added (INVALID_URL, SLUG_RESERVED, …), or
// VALIDATION_ERROR when every error is generic, with all fields in Fields.
func (f *FieldErrors) Err() error {
	if len(f.list) == 0 {
		return nil
	}
	e := &Error{Code: Validation, Fields: make(map[string]string, len(f.list))}
	first := f.list[0]
	for _, fe := range f.list {
		e.Fields[fe.field] = fe.message
		if e.Code == Validation && fe.code != Validation {
			e.Code = fe.code
			first = fe
		}
	}
	e.Message = first.field + ": " + first.message
	if len(f.list) > 1 {
		e.Message += fmt.Sprintf(" (and %d more)", len(f.list)-1)
	}
	return e
}
