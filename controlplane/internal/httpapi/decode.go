package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"shortlink.dev/shared/fault"
)

// MaxBodyBytes is the largest request body the API reads (1 MiB); a larger one
// is answered 413.
const MaxBodyBytes = 1 << 20

// decodeJSON reads the request body into dst, a pointer to a struct whose
// fields carry json tags. It is strict: malformed JSON, a body that is not an
// object, unknown fields and wrong types are VALIDATION_ERROR, with every
// offending field named in details.fields.
func decodeJSON(r *http.Request, dst any) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	return decodeObject(body, dst)
}

// readBody reads the request body, at most MaxBodyBytes (the router's
// http.MaxBytesReader): a larger one is PAYLOAD_TOO_LARGE, one that cannot be
// read a VALIDATION_ERROR of the field "body".
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, fault.New(fault.PayloadTooLarge, "request body is larger than %d bytes", MaxBodyBytes)
		}
		return nil, fault.Field(fault.Validation, "body", "could not be read")
	}
	return body, nil
}

// decodeObject is decodeJSON on bytes; it is the part the fuzzer drives.
func decodeObject(body []byte, dst any) error {
	if len(strings.TrimSpace(string(body))) == 0 {
		return fault.Field(fault.Validation, "body", "must be a JSON object")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return fault.Field(fault.Validation, "body", "must be a JSON object")
		}
		return fault.Field(fault.Validation, "body", "is not valid JSON: "+strings.TrimPrefix(err.Error(), "json: "))
	}
	if raw == nil {
		return fault.Field(fault.Validation, "body", "must be a JSON object")
	}
	v := reflect.ValueOf(dst).Elem()
	fields := fieldsOf(v.Type())
	var fe fault.FieldErrors
	for _, name := range sortedKeys(raw) {
		idx, ok := fields[name]
		if !ok {
			fe.Add(fault.Validation, name, "unknown field")
			continue
		}
		f := v.Field(idx)
		if err := json.Unmarshal(raw[name], f.Addr().Interface()); err != nil {
			fe.Add(fault.Validation, name, typeMessage(f.Type()))
		}
	}
	return fe.Err()
}

var fieldCache sync.Map // reflect.Type → map[string]int

// fieldsOf maps the json names of a struct's fields to their index.
func fieldsOf(t reflect.Type) map[string]int {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]int)
	}
	m := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = i
		}
	}
	fieldCache.Store(t, m)
	return m
}

var timeType = reflect.TypeOf(time.Time{})

// typeMessage says what a field of type t must be, for a wrong-type error.
func typeMessage(t reflect.Type) string {
	// patch.Field[T] wraps the value in V.
	if t.Kind() == reflect.Struct && t != timeType {
		if f, ok := t.FieldByName("V"); ok {
			t = f.Type
		}
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return "must be an RFC 3339 date-time, like 2030-01-31T12:00:00Z"
	case t.Kind() == reflect.String:
		return "must be a string"
	case t.Kind() == reflect.Bool:
		return "must be true or false"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "must be a whole number"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "must be a number"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return "must be an array of strings"
	case t.Kind() == reflect.Slice:
		return "must be an array"
	case t.Kind() == reflect.Map && t.Elem().Kind() == reflect.String:
		return "must be an object with string values"
	default:
		return "has the wrong type"
	}
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Sorted so that the first error reported is the same on every run.
	slices.Sort(keys)
	return keys
}
