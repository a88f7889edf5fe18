// Package api holds the JSON shapes of the shortlink API (v1): what the
// server writes, what the Go client decodes and what the end-to-end suite
// checks. It is the one place a field of the API is declared; the server
// converts its records into these types (controlplane/internal/convert), the
// client re-exports them and the OpenAPI document is tested against them.
//
// The package uses the standard library only, so that any Go program can
// import it without the server's dependencies. Times are UTC and encode in
// RFC 3339 (with fractional seconds when there are some).
package api

import "encoding/json"

// Meta is a list's page: its number and size, the total count and whether
// more pages follow.
type Meta struct {
	// Page is the page's number, from 1.
	Page int `json:"page"`
	// PerPage is the page's size (at most 100).
	PerPage int `json:"perPage"`
	// Total is the number of items of the whole list.
	Total int `json:"total"`
	// HasMore is true when pages follow this one.
	HasMore bool `json:"hasMore"`
}

// Error is the envelope's error: a machine-readable code, a message for
// people and details (details.fields holds each offending input field with
// its message).
type Error struct {
	// Code is the machine-readable code (VALIDATION_ERROR, SLUG_EXISTS, …).
	Code string `json:"code"`
	// Message is the human-readable explanation.
	Message string `json:"message"`
	// Details holds more about the error; "fields" maps each offending
	// input field to its message. The server always sends an object.
	Details map[string]any `json:"details"`
}

// BulkItem is one item of POST /links/bulk's answer: the item's own
// envelope, with the created link or with the error it would have got from
// POST /links.
type BulkItem struct {
	// Success tells which of Data and Error is set.
	Success bool `json:"success"`
	// Data is the created link.
	Data *Link `json:"data,omitempty"`
	// Error is why the item was not created.
	Error *Error `json:"error,omitempty"`
}

// Field is an optional member of an update (PATCH) body that tells apart
// "leave as is" (the zero Field, left out of the body), "clear" (Null, sent
// as null) and "set" (Set).
type Field[T any] struct {
	set, null bool
	v         T
}

// Set returns a field set to v.
func Set[T any](v T) Field[T] { return Field[T]{set: true, v: v} }

// Null returns a field that clears the value (JSON null).
func Null[T any]() Field[T] { return Field[T]{set: true, null: true} }

// IsZero reports whether the field is left out (encoding/json's omitzero).
func (f Field[T]) IsZero() bool { return !f.set }

// Value returns the value and whether the field sets one.
func (f Field[T]) Value() (T, bool) { return f.v, f.set && !f.null }

// MarshalJSON implements json.Marshaler.
func (f Field[T]) MarshalJSON() ([]byte, error) {
	if !f.set || f.null {
		return []byte("null"), nil
	}
	return json.Marshal(f.v)
}

// UnmarshalJSON implements json.Unmarshaler.
func (f *Field[T]) UnmarshalJSON(b []byte) error {
	f.set = true
	if string(b) == "null" {
		f.null = true
		return nil
	}
	f.null = false
	return json.Unmarshal(b, &f.v)
}
