// Package patch tells apart, in a JSON body, a field that is absent, a field that
// is null and a field with a value: PATCH needs all three ("password": null
// removes the password, an absent password keeps it).
package patch

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"shortlink.dev/shared/fault"
)

// Field is one optional JSON field.
type Field[T any] struct {
	// Set is true when the field was present in the body, null included.
	Set bool
	// Null is true when the field was present as null.
	Null bool
	// V is the value when Set and not Null.
	V T
}

// UnmarshalJSON implements json.Unmarshaler; it is called for present fields only.
func (f *Field[T]) UnmarshalJSON(b []byte) error {
	f.Set = true
	if string(b) == "null" {
		f.Null = true
		var zero T
		f.V = zero
		return nil
	}
	f.Null = false
	return json.Unmarshal(b, &f.V)
}

// Value returns a field set to v.
func Value[T any](v T) Field[T] {
	return Field[T]{Set: true, V: v}
}

// HasValue reports whether the field holds a value (present and not null).
func (f Field[T]) HasValue() bool {
	return f.Set && !f.Null
}

// Ptr returns a pointer to the value, or nil when the field holds none.
func (f Field[T]) Ptr() *T {
	if !f.HasValue() {
		return nil
	}
	v := f.V
	return &v
}

// SetText applies a text field to dst: absent keeps it, null clears it, a
// value of at most max characters of valid UTF-8 sets it; anything else is
// added to fe as a VALIDATION_ERROR of the field name.
func SetText(dst **string, f Field[string], max int, name string, fe *fault.FieldErrors) {
	if !f.Set {
		return
	}
	if f.Null {
		*dst = nil
		return
	}
	if !utf8.ValidString(f.V) || utf8.RuneCountInString(f.V) > max {
		fe.Add(fault.Validation, name, fmt.Sprintf("must be text of at most %d characters", max))
		return
	}
	if HasControl(f.V) {
		fe.Add(fault.Validation, name, "must not contain control characters (line breaks and tabs are fine)")
		return
	}
	v := f.V
	*dst = &v
}

// HasControl reports whether s holds a control character other than tab,
// line feed and carriage return: NUL and the like, which PostgreSQL refuses
// in text and no person means to type.
func HasControl(s string) bool {
	for _, r := range s {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return true
		}
	}
	return false
}

// SetURL applies a URL field to dst like SetText, with check saying why a
// value is not a valid URL ("" when it is).
func SetURL(dst **string, f Field[string], name string, check func(string) string, fe *fault.FieldErrors) {
	if !f.Set {
		return
	}
	if f.Null {
		*dst = nil
		return
	}
	if why := check(f.V); why != "" {
		fe.Add(fault.Validation, name, why)
		return
	}
	v := f.V
	*dst = &v
}
