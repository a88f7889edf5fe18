package fault

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestStatus(t *testing.T) {
	// CONTRACT §2 (plus 413 and 405 of the transport layer).
	tests := []struct {
		code Code
		want int
	}{
		{"VALIDATION_ERROR", http.StatusBadRequest},
		{"INVALID_URL", http.StatusBadRequest},
		{"SLUG_RESERVED", http.StatusBadRequest},
		{"INVALID_EXPIRATION", http.StatusBadRequest},
		{"PASSWORD_TOO_SHORT", http.StatusBadRequest},
		{"DOMAIN_NOT_VERIFIED", http.StatusBadRequest},
		{"UNAUTHORIZED", http.StatusUnauthorized},
		{"LIMIT_REACHED", http.StatusPaymentRequired},
		{"FORBIDDEN", http.StatusForbidden},
		{"NOT_FOUND", http.StatusNotFound},
		{"SLUG_EXISTS", http.StatusConflict},
		{"DOMAIN_EXISTS", http.StatusConflict},
		{"RATE_LIMITED", http.StatusTooManyRequests},
		{"INTERNAL_ERROR", http.StatusInternalServerError},
		{"PAYLOAD_TOO_LARGE", http.StatusRequestEntityTooLarge},
		{"METHOD_NOT_ALLOWED", http.StatusMethodNotAllowed},
		{"IDEMPOTENCY_KEY_REUSED", http.StatusConflict},
		{"IDEMPOTENCY_KEY_IN_USE", http.StatusConflict},
		{"PAYMENT_PROCESSOR_ERROR", http.StatusBadGateway},
		{"SERVICE_UNAVAILABLE", http.StatusServiceUnavailable},
		{"CONFLICT", http.StatusConflict},
		// Unknown codes are a bug and answer 500.
		{"", http.StatusInternalServerError},
		{"validation_error", http.StatusInternalServerError},
		{"SOMETHING_ELSE", http.StatusInternalServerError},
	}
	for _, tc := range tests {
		t.Run(string(tc.code), func(t *testing.T) {
			if got := tc.code.Status(); got != tc.want {
				t.Errorf("%q.Status() = %d, want %d", tc.code, got, tc.want)
			}
		})
	}
}

func TestConstantsSpelling(t *testing.T) {
	want := map[Code]string{
		Validation: "VALIDATION_ERROR", InvalidURL: "INVALID_URL", SlugReserved: "SLUG_RESERVED",
		SlugExists: "SLUG_EXISTS", InvalidExpiration: "INVALID_EXPIRATION", PasswordTooShort: "PASSWORD_TOO_SHORT",
		DomainNotVerified: "DOMAIN_NOT_VERIFIED", DomainExists: "DOMAIN_EXISTS", Unauthorized: "UNAUTHORIZED",
		LimitReached: "LIMIT_REACHED", Forbidden: "FORBIDDEN", NotFound: "NOT_FOUND",
		MethodNotAllowed: "METHOD_NOT_ALLOWED", PayloadTooLarge: "PAYLOAD_TOO_LARGE",
		RateLimited: "RATE_LIMITED", Internal: "INTERNAL_ERROR",
		IdempotencyKeyReused: "IDEMPOTENCY_KEY_REUSED", IdempotencyKeyInUse: "IDEMPOTENCY_KEY_IN_USE",
		PaymentProcessor: "PAYMENT_PROCESSOR_ERROR", Unavailable: "SERVICE_UNAVAILABLE",
		Conflict:  "CONFLICT",
		LastOwner: "LAST_OWNER", MemberExists: "MEMBER_EXISTS", InviteExpired: "INVITE_EXPIRED",
	}
	for c, s := range want {
		if string(c) != s {
			t.Errorf("constant %q, want %q", c, s)
		}
		if _, ok := statuses[c]; !ok {
			t.Errorf("%s has no status", c)
		}
	}
	if len(statuses) != len(want) {
		t.Errorf("statuses has %d codes, want %d", len(statuses), len(want))
	}
}

func TestFieldErrorsEmpty(t *testing.T) {
	var fe FieldErrors
	if err := fe.Err(); err != nil {
		t.Errorf("Err() of nothing = %v", err)
	}
}

func TestFieldErrorsAllGeneric(t *testing.T) {
	var fe FieldErrors
	fe.Add(Validation, "title", "too long")
	fe.Add(Validation, "tags", "too many")
	e, ok := As(fe.Err())
	if !ok {
		t.Fatal("Err() is not an *Error")
	}
	if e.Code != Validation {
		t.Errorf("Code = %s", e.Code)
	}
	if !reflect.DeepEqual(e.Fields, map[string]string{"title": "too long", "tags": "too many"}) {
		t.Errorf("Fields = %v", e.Fields)
	}
	if e.Message != "title: too long (and 1 more)" {
		t.Errorf("Message = %q", e.Message)
	}
}

func TestFieldErrorsFirstSpecificCode(t *testing.T) {
	var fe FieldErrors
	fe.Add(Validation, "title", "too long")
	fe.Add(InvalidURL, "destinationUrl", "must use http or https")
	fe.Add(SlugReserved, "slug", "is reserved")
	fe.Add(Validation, "tags", "too many")
	err := fe.Err()
	e, ok := As(err)
	if !ok {
		t.Fatal("Err() is not an *Error")
	}
	if e.Code != InvalidURL {
		t.Errorf("Code = %s, want the first specific code INVALID_URL", e.Code)
	}
	want := map[string]string{
		"title": "too long", "destinationUrl": "must use http or https",
		"slug": "is reserved", "tags": "too many",
	}
	if !reflect.DeepEqual(e.Fields, want) {
		t.Errorf("Fields = %v, want %v", e.Fields, want)
	}
	if e.Message != "destinationUrl: must use http or https (and 3 more)" {
		t.Errorf("Message = %q", e.Message)
	}
	if CodeOf(err) != InvalidURL || CodeOf(err).Status() != 400 {
		t.Errorf("CodeOf = %s", CodeOf(err))
	}
}

func TestFieldErrorsSingle(t *testing.T) {
	var fe FieldErrors
	fe.Add(PasswordTooShort, "password", "must be at least 4 characters")
	e, _ := As(fe.Err())
	if e.Code != PasswordTooShort || e.Message != "password: must be at least 4 characters" ||
		!reflect.DeepEqual(e.Fields, map[string]string{"password": "must be at least 4 characters"}) {
		t.Errorf("%+v", e)
	}
}

func TestFieldErrorsFirstErrorOfAFieldWins(t *testing.T) {
	var fe FieldErrors
	fe.Add(Validation, "slug", "first")
	fe.Add(SlugReserved, "slug", "second")
	e, _ := As(fe.Err())
	if e.Code != Validation || e.Fields["slug"] != "first" || len(e.Fields) != 1 {
		t.Errorf("%+v", e)
	}
	if strings.Contains(e.Message, "more") {
		t.Errorf("Message = %q counts a dropped error", e.Message)
	}
}

func TestCodeOf(t *testing.T) {
	base := Field(SlugExists, "slug", "is taken")
	tests := []struct {
		name string
		err  error
		want Code
	}{
		{"direct", base, SlugExists},
		{"wrapped", fmt.Errorf("create link: %w", base), SlugExists},
		{"wrapped twice", fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", NotFoundf("link"))), NotFound},
		{"joined", errors.Join(errors.New("x"), New(RateLimited, "slow down")), RateLimited},
		{"plain", errors.New("disk on fire"), Internal},
		{"formatted not wrapped", fmt.Errorf("x: %v", base), Internal},
		{"nil", nil, Internal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := CodeOf(tc.err); got != tc.want {
				t.Errorf("CodeOf = %s, want %s", got, tc.want)
			}
			if !Is(tc.err, tc.want) {
				t.Errorf("Is(err, %s) = false", tc.want)
			}
		})
	}
	e, ok := As(fmt.Errorf("wrap: %w", base))
	if !ok || e != base {
		t.Errorf("As on a wrapped error = %v, %v", e, ok)
	}
	if _, ok := As(errors.New("x")); ok {
		t.Error("As on a plain error = true")
	}
}

func TestConstructors(t *testing.T) {
	if e := New(LimitReached, "limit of %d links reached", 1000); e.Code != LimitReached || e.Message != "limit of 1000 links reached" || e.Fields != nil {
		t.Errorf("New: %+v", e)
	}
	if e := NotFoundf("link"); e.Code != NotFound || e.Message != "link not found" {
		t.Errorf("NotFoundf: %+v", e)
	}
	e := Field(InvalidURL, "destinationUrl", "bad")
	if e.Code != InvalidURL || e.Message != "destinationUrl: bad" || !reflect.DeepEqual(e.Fields, map[string]string{"destinationUrl": "bad"}) {
		t.Errorf("Field: %+v", e)
	}
	if got := New(NotFound, "gone").Error(); got != "NOT_FOUND: gone" {
		t.Errorf("Error() = %q", got)
	}
	if got := e.Error(); !strings.HasPrefix(got, "INVALID_URL: destinationUrl: bad") {
		t.Errorf("Error() = %q", got)
	}
}
