package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"shortlink.dev/controlplane/internal/links"
	"shortlink.dev/shared/fault"
)

func TestDecodeObject(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		fields []string // offending fields expected in details.fields
	}{
		{"OK", `{"destinationUrl":"https://a.example","tags":["x"],"clickLimit":5,"expiresAt":null}`, nil},
		{"ErrEmpty", ``, []string{"body"}},
		{"ErrMalformed", `{"destinationUrl":`, []string{"body"}},
		{"ErrTrailingGarbage", `{} {}`, []string{"body"}},
		{"ErrArray", `[1,2]`, []string{"body"}},
		{"ErrNull", `null`, []string{"body"}},
		{"ErrString", `"x"`, []string{"body"}},
		{"ErrUnknownFields", `{"destinationUrl":"https://a.example","foo":1,"bar":2}`, []string{"foo", "bar"}},
		{"ErrTypes", `{"destinationUrl":5,"tags":"x","clickLimit":1.5,"geoTargets":[],"expiresAt":"tomorrow"}`,
			[]string{"destinationUrl", "tags", "clickLimit", "geoTargets", "expiresAt"}},
		{"ErrBoolType", `{"isArchived":"yes"}`, []string{"isArchived"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in links.Input
			err := decodeObject([]byte(tt.body), &in)
			if len(tt.fields) == 0 {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			e, ok := fault.As(err)
			if !ok || e.Code != fault.Validation {
				t.Fatalf("error %v, want VALIDATION_ERROR", err)
			}
			if len(e.Fields) != len(tt.fields) {
				t.Fatalf("fields %v, want exactly %v", e.Fields, tt.fields)
			}
			for _, f := range tt.fields {
				if e.Fields[f] == "" {
					t.Errorf("field %q not named in %v", f, e.Fields)
				}
			}
		})
	}
}

func TestDecodeObjectKeepsNullApartFromAbsent(t *testing.T) {
	var in links.Input
	if err := decodeObject([]byte(`{"password":null,"title":"t"}`), &in); err != nil {
		t.Fatal(err)
	}
	if !in.Password.Set || !in.Password.Null {
		t.Errorf("password: %+v, want set and null", in.Password)
	}
	if in.ExpiresAt.Set {
		t.Errorf("expiresAt: %+v, want absent", in.ExpiresAt)
	}
	if in.Title.V != "t" {
		t.Errorf("title: %+v", in.Title)
	}
}

// FuzzDecodeLinkInput: any bytes decode to a value or a VALIDATION_ERROR naming
// at least one field; never a panic, never another kind of error.
func FuzzDecodeLinkInput(f *testing.F) {
	for _, s := range []string{
		`{"destinationUrl":"https://a.example"}`, `{"tags":["a","b"],"geoTargets":{"US":"https://u.example"}}`,
		`{"expiresAt":"2030-01-01T00:00:00Z","clickLimit":3}`, `{"password":null}`, `[]`, `{`, ``, `{"a":{"b":[1,{"c":null}]}}`,
		`{"clickLimit":1e400}`, `{"destinationUrl":"\u0000"}`, "\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var in links.Input
		err := decodeObject(body, &in)
		if err == nil {
			if !json.Valid(body) {
				t.Fatalf("accepted invalid JSON %q", body)
			}
			return
		}
		e, ok := fault.As(err)
		if !ok || e.Code != fault.Validation || len(e.Fields) == 0 {
			t.Fatalf("error %v: want VALIDATION_ERROR with fields", err)
		}
		for k, v := range e.Fields {
			if strings.TrimSpace(v) == "" {
				t.Fatalf("field %q has an empty message", k)
			}
		}
	})
}
