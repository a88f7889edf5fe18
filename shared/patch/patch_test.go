package patch

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

type body struct {
	Password   Field[string]            `json:"password"`
	Tags       Field[[]string]          `json:"tags"`
	GeoTargets Field[map[string]string] `json:"geoTargets"`
	ClickLimit Field[int64]             `json:"clickLimit"`
}

func decode(t *testing.T, s string) body {
	t.Helper()
	var b body
	if err := json.Unmarshal([]byte(s), &b); err != nil {
		t.Fatalf("Unmarshal(%s): %v", s, err)
	}
	return b
}

// state describes a field as (Set, Null, HasValue).
type state struct{ set, null, has bool }

var (
	absent = state{false, false, false}
	null   = state{true, true, false}
	value  = state{true, false, true}
)

func stateOf[T any](f Field[T]) state { return state{f.Set, f.Null, f.HasValue()} }

func TestAbsent(t *testing.T) {
	for _, s := range []string{`{}`, `{"other": 1}`} {
		b := decode(t, s)
		if stateOf(b.Password) != absent || stateOf(b.Tags) != absent || stateOf(b.GeoTargets) != absent || stateOf(b.ClickLimit) != absent {
			t.Errorf("%s: %+v", s, b)
		}
		if b.Password.Ptr() != nil || b.Tags.Ptr() != nil || b.GeoTargets.Ptr() != nil || b.ClickLimit.Ptr() != nil {
			t.Errorf("%s: Ptr of an absent field is not nil", s)
		}
	}
}

func TestNull(t *testing.T) {
	b := decode(t, `{"password": null, "tags": null, "geoTargets": null, "clickLimit": null}`)
	for name, st := range map[string]state{
		"password": stateOf(b.Password), "tags": stateOf(b.Tags),
		"geoTargets": stateOf(b.GeoTargets), "clickLimit": stateOf(b.ClickLimit),
	} {
		if st != null {
			t.Errorf("%s: state %+v, want null", name, st)
		}
	}
	if b.Password.V != "" || b.Tags.V != nil || b.GeoTargets.V != nil || b.ClickLimit.V != 0 {
		t.Errorf("null fields hold values: %+v", b)
	}
	if b.Password.Ptr() != nil || b.Tags.Ptr() != nil || b.GeoTargets.Ptr() != nil || b.ClickLimit.Ptr() != nil {
		t.Error("Ptr of a null field is not nil")
	}
}

func TestValues(t *testing.T) {
	b := decode(t, `{"password": "secret", "tags": ["a", "b"], "geoTargets": {"US": "https://x.us"}, "clickLimit": 42}`)
	if stateOf(b.Password) != value || b.Password.V != "secret" {
		t.Errorf("password: %+v", b.Password)
	}
	if stateOf(b.Tags) != value || !reflect.DeepEqual(b.Tags.V, []string{"a", "b"}) {
		t.Errorf("tags: %+v", b.Tags)
	}
	if stateOf(b.GeoTargets) != value || !reflect.DeepEqual(b.GeoTargets.V, map[string]string{"US": "https://x.us"}) {
		t.Errorf("geoTargets: %+v", b.GeoTargets)
	}
	if stateOf(b.ClickLimit) != value || b.ClickLimit.V != 42 {
		t.Errorf("clickLimit: %+v", b.ClickLimit)
	}
	if p := b.ClickLimit.Ptr(); p == nil || *p != 42 {
		t.Errorf("ClickLimit.Ptr() = %v", p)
	}
	if p := b.Password.Ptr(); p == nil || *p != "secret" {
		t.Errorf("Password.Ptr() = %v", p)
	}
}

// Zero values are values, not absence: "" and 0 and [] and {} are present.
func TestZeroValues(t *testing.T) {
	b := decode(t, `{"password": "", "tags": [], "geoTargets": {}, "clickLimit": 0}`)
	if stateOf(b.Password) != value || stateOf(b.Tags) != value || stateOf(b.GeoTargets) != value || stateOf(b.ClickLimit) != value {
		t.Errorf("zero values: %+v", b)
	}
	if b.Tags.V == nil || len(b.Tags.V) != 0 {
		t.Errorf("tags: %#v, want an empty non-nil slice", b.Tags.V)
	}
	if b.GeoTargets.V == nil || len(b.GeoTargets.V) != 0 {
		t.Errorf("geoTargets: %#v, want an empty non-nil map", b.GeoTargets.V)
	}
}

func TestMixed(t *testing.T) {
	b := decode(t, `{"password": null, "clickLimit": 5}`)
	if stateOf(b.Password) != null || stateOf(b.ClickLimit) != value || stateOf(b.Tags) != absent || stateOf(b.GeoTargets) != absent {
		t.Errorf("%+v", b)
	}
}

// A null after a value in the same document (duplicate key) clears the value.
func TestNullReplacesValue(t *testing.T) {
	b := decode(t, `{"clickLimit": 5, "clickLimit": null}`)
	if stateOf(b.ClickLimit) != null || b.ClickLimit.V != 0 {
		t.Errorf("%+v", b.ClickLimit)
	}
	b = decode(t, `{"tags": ["x"], "tags": null}`)
	if stateOf(b.Tags) != null || b.Tags.V != nil {
		t.Errorf("%+v", b.Tags)
	}
}

func TestTypeErrors(t *testing.T) {
	tests := []struct{ field, doc string }{
		{"password", `{"password": 5}`},
		{"password", `{"password": ["x"]}`},
		{"tags", `{"tags": "a,b"}`},
		{"tags", `{"tags": [1, 2]}`},
		{"geoTargets", `{"geoTargets": ["US"]}`},
		{"geoTargets", `{"geoTargets": {"US": 1}}`},
		{"clickLimit", `{"clickLimit": "5"}`},
		{"clickLimit", `{"clickLimit": 1.5}`},
		{"clickLimit", `{"clickLimit": true}`},
		{"clickLimit", `{"clickLimit": 99999999999999999999}`},
	}
	for _, tc := range tests {
		t.Run(tc.doc, func(t *testing.T) {
			var b body
			err := json.Unmarshal([]byte(tc.doc), &b)
			if err == nil {
				t.Fatalf("no error; decoded %+v", b)
			}
			var te *json.UnmarshalTypeError
			if !errors.As(err, &te) {
				t.Fatalf("error %v (%T) is not a *json.UnmarshalTypeError", err, err)
			}
			// The field path lets the API name the offending field.
			if !strings.HasPrefix(te.Field, tc.field) {
				t.Errorf("UnmarshalTypeError.Field = %q, want it to start with %q (error: %v)", te.Field, tc.field, err)
			}
		})
	}
}

func TestSyntaxErrorSurfaces(t *testing.T) {
	var b body
	err := json.Unmarshal([]byte(`{"clickLimit": }`), &b)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T), want *json.SyntaxError", err, err)
	}
}

func TestDisallowUnknownFieldsStillWorks(t *testing.T) {
	dec := json.NewDecoder(strings.NewReader(`{"password": null, "nope": 1}`))
	dec.DisallowUnknownFields()
	var b body
	if err := dec.Decode(&b); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown field error = %v", err)
	}
}

func TestUnmarshalJSONDirect(t *testing.T) {
	var f Field[int64]
	if err := f.UnmarshalJSON([]byte("7")); err != nil || stateOf(f) != value || f.V != 7 {
		t.Errorf("7: %+v, %v", f, err)
	}
	if err := f.UnmarshalJSON([]byte("null")); err != nil || stateOf(f) != null || f.V != 0 {
		t.Errorf("null: %+v, %v", f, err)
	}
	if err := f.UnmarshalJSON([]byte(`"x"`)); err == nil {
		t.Error(`"x" into int64: no error`)
	}
}

func TestValueHelper(t *testing.T) {
	f := Value([]string{"a"})
	if stateOf(f) != value || !reflect.DeepEqual(f.V, []string{"a"}) {
		t.Errorf("%+v", f)
	}
	var zero Field[string]
	if stateOf(zero) != absent || zero.Ptr() != nil {
		t.Errorf("zero Field: %+v", zero)
	}
	// Ptr returns a copy: writing through it does not change the field.
	s := Value("a")
	*s.Ptr() = "b"
	if s.V != "a" {
		t.Errorf("Ptr aliases the field: %q", s.V)
	}
}
