package httpapi

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/internal/billing"
	"shortlink.dev/controlplane/internal/domains"
	"shortlink.dev/controlplane/internal/galleries"
	"shortlink.dev/controlplane/internal/keys"
	"shortlink.dev/controlplane/internal/links"
	"shortlink.dev/controlplane/internal/qrcodes"
	"shortlink.dev/controlplane/internal/webhooks"
)

// The handlers decode request bodies into the services' input types (which
// tell absent, null and set apart for the services' checks); the client and
// the dashboard send the wire types of shortlink.dev/api, which the OpenAPI
// document is checked against. Each body the server reads must have the
// members, and the JSON kinds, of the wire types that describe it: a field
// added to one and not the other fails here.
func TestBodiesMatchTheWireInputs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server any
		wire   []any
	}{
		{"link", links.Input{}, []any{api.LinkInput{}, api.LinkUpdate{}}},
		{"domain", domains.Input{}, []any{api.DomainInput{}}},
		{"qr generate", qrcodes.GenerateInput{}, []any{api.QRGenerateInput{}}},
		{"qr code", qrcodes.Input{}, []any{api.QRCodeInput{}, api.QRCodeUpdate{}}},
		{"gallery", galleries.Input{}, []any{api.GalleryInput{}, api.GalleryUpdate{}}},
		{"gallery item", galleries.ItemInput{}, []any{api.GalleryItemInput{}, api.GalleryItemUpdate{}}},
		{"gallery publish", publishInput{}, []any{api.PublishInput{}}},
		{"gallery reorder", reorderInput{}, []any{api.ReorderInput{}}},
		{"webhook", webhooks.Input{}, []any{api.WebhookInput{}, api.WebhookUpdate{}}},
		{"api key", keys.Input{}, []any{api.APIKeyInput{}}},
		{"checkout", billing.CheckoutInput{}, []any{api.CheckoutSessionInput{}}},
		{"plan checkout", checkoutBody{}, []any{api.CheckoutInput{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := members(reflect.TypeOf(tc.server))
			wire := map[string]string{}
			for _, w := range tc.wire {
				for name, kind := range members(reflect.TypeOf(w)) {
					if k, ok := wire[name]; ok && k != kind {
						t.Errorf("%s: %s in one wire type, %s in another", name, k, kind)
					}
					wire[name] = kind
				}
			}
			for _, name := range slices.Sorted(maps.Keys(server)) {
				if kind, ok := wire[name]; !ok {
					t.Errorf("the server reads %q, which no wire type of %s has", name, tc.name)
				} else if kind != server[name] {
					t.Errorf("%q: the server reads %s, the wire type sends %s", name, server[name], kind)
				}
			}
			for _, name := range slices.Sorted(maps.Keys(wire)) {
				if _, ok := server[name]; !ok {
					t.Errorf("the wire type sends %q, which the server does not read", name)
				}
			}
		})
	}
}

// members maps the JSON members of struct type t (its embedded structs'
// included) to their JSON kinds.
func members(t reflect.Type) map[string]string {
	out := map[string]string{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && name == "" {
			maps.Copy(out, members(f.Type)) // encoding/json flattens it
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = jsonKind(f.Type)
	}
	return out
}

var (
	wireTimeType  = reflect.TypeFor[time.Time]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
)

// jsonKind names the JSON a Go type reads or writes: the tri-state fields
// (api.Field, patch.Field) and pointers count as what they hold.
func jsonKind(t reflect.Type) string {
	for {
		switch {
		case t.Kind() == reflect.Pointer:
			t = t.Elem()
			continue
		case t.Kind() == reflect.Struct && strings.HasPrefix(t.Name(), "Field["):
			t = t.Field(2).Type // the value, after the set and null flags
			continue
		}
		break
	}
	switch {
	case t == wireTimeType:
		return "time"
	case t.Kind() == reflect.String:
		return "string"
	case t.Kind() == reflect.Bool:
		return "boolean"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64:
		return "number"
	case t.Kind() == reflect.Slice:
		return "array of " + jsonKind(t.Elem())
	case t.Kind() == reflect.Map:
		return "object of " + jsonKind(t.Elem())
	case t.Kind() == reflect.Struct && !t.Implements(marshalerType):
		return "object"
	}
	return t.String()
}
