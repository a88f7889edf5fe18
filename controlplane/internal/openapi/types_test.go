package openapi

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"shortlink.dev/api"
)

// wireSchemas pairs each schema of the description with the type of
// shortlink.dev/api that the server writes or the client sends for it.
var wireSchemas = []struct {
	schema string
	typ    any
}{
	{"Meta", api.Meta{}},
	{"Error", api.Error{}},
	{"Link", api.Link{}},
	{"LinkInput", api.LinkInput{}},
	{"LinkUpdate", api.LinkUpdate{}},
	{"LinkBulkUpdate", api.LinkBulkUpdate{}},
	{"LinkStats", api.Stats{}},
	{"ImportJob", api.ImportJob{}},
	{"Analytics", api.Analytics{}},
	{"APIKey", api.APIKey{}},
	{"APIKeyInput", api.APIKeyInput{}},
	{"Usage", api.Usage{}},
	{"AuditEntry", api.AuditEntry{}},
	{"Member", api.Member{}},
	{"MemberUpdate", api.MemberUpdate{}},
	{"Invite", api.Invite{}},
	{"InviteInput", api.InviteInput{}},
	{"InviteAcceptance", api.InviteAcceptance{}},
	{"InviteAccepted", api.InviteAccepted{}},
	{"Domain", api.Domain{}},
	{"DomainInput", api.DomainInput{}},
	{"QRGenerateInput", api.QRGenerateInput{}},
	{"QRGenerated", api.QRGenerated{}},
	{"QRCode", api.QRCode{}},
	{"QRCodeInput", api.QRCodeInput{}},
	{"QRCodeUpdate", api.QRCodeUpdate{}},
	{"SocialLink", api.SocialLink{}},
	{"Gallery", api.Gallery{}},
	{"GalleryItem", api.GalleryItem{}},
	{"GalleryInput", api.GalleryInput{}},
	{"GalleryUpdate", api.GalleryUpdate{}},
	{"GalleryItemInput", api.GalleryItemInput{}},
	{"GalleryItemUpdate", api.GalleryItemUpdate{}},
	{"PublishInput", api.PublishInput{}},
	{"ReorderInput", api.ReorderInput{}},
	{"PublicGallery", api.PublicGallery{}},
	{"Webhook", api.Webhook{}},
	{"WebhookInput", api.WebhookInput{}},
	{"WebhookUpdate", api.WebhookUpdate{}},
	{"Delivery", api.Delivery{}},
	{"CheckoutInput", api.CheckoutInput{}},
	{"CheckoutSessionInput", api.CheckoutSessionInput{}},
	{"CheckoutSession", api.CheckoutSession{}},
}

// notDescribedAlone are the types of api that no schema describes by
// themselves, and why.
var notDescribedAlone = map[string]string{
	// The description splits a bulk item into its two shapes (oneOf a
	// success with a Link, or the ErrorEnvelope), both checked above.
	"BulkItem": "described as BulkLinkResponse's oneOf",
}

// TestWireTypesMatchTheSchemas fails when a type of shortlink.dev/api and
// its schema differ: a JSON field that is no property of the schema (or a
// property that is no field), a Go type the schema's type does not allow, a
// pointer without omitempty whose property does not allow null, or a field
// left out when empty (omitempty, omitzero) that the schema requires, or
// the other way round. Adding a field to a type without its schema, or to a
// schema without its type, fails here.
func TestWireTypesMatchTheSchemas(t *testing.T) {
	doc := mustSpec(t).Doc
	for _, w := range wireSchemas {
		t.Run(w.schema, func(t *testing.T) {
			ref := doc.Components.Schemas[w.schema]
			if ref == nil || ref.Value == nil {
				t.Fatalf("the description has no schema %s", w.schema)
			}
			c := &typeCheck{t: t, reached: map[string]bool{}}
			c.value(w.schema, reflect.TypeOf(w.typ), ref.Value, false)
		})
	}
	t.Run("EveryTypeIsChecked", func(t *testing.T) {
		// The types met on the way from the listed ones: their parts.
		reached := map[string]bool{}
		for _, w := range wireSchemas {
			if ref := doc.Components.Schemas[w.schema]; ref != nil && ref.Value != nil {
				c := &typeCheck{t: &recorder{}, reached: reached}
				c.value(w.schema, reflect.TypeOf(w.typ), ref.Value, false)
			}
		}
		for _, name := range apiStructTypes(t) {
			if _, ok := notDescribedAlone[name]; !ok && !reached[name] {
				t.Errorf("api.%s is checked against no schema: add it to wireSchemas (or to notDescribedAlone with the reason)", name)
			}
		}
	})
}

// TestTypeCheckCatchesAMismatch shows the check failing on the mismatches
// it exists for, so that a check that passes everything cannot go unseen.
func TestTypeCheckCatchesAMismatch(t *testing.T) {
	schema := &openapi3.Schema{
		Type:     &openapi3.Types{"object"},
		Required: []string{"id", "when"},
		Properties: openapi3.Schemas{
			"id":    {Value: &openapi3.Schema{Type: &openapi3.Types{"string"}}},
			"when":  {Value: &openapi3.Schema{Type: &openapi3.Types{"string"}, Format: "date-time"}},
			"extra": {Value: &openapi3.Schema{Type: &openapi3.Types{"integer"}}},
		},
	}
	for name, typ := range map[string]any{
		"a property without field": struct {
			ID   string    `json:"id"`
			When time.Time `json:"when"`
		}{},
		"a field without property": struct {
			ID    string    `json:"id"`
			When  time.Time `json:"when"`
			Extra int       `json:"extra"`
			New   string    `json:"new"`
		}{},
		"a wrong type": struct {
			ID    int       `json:"id"`
			When  time.Time `json:"when"`
			Extra int       `json:"extra"`
		}{},
		"a required field left out when empty": struct {
			ID    string    `json:"id,omitempty"`
			When  time.Time `json:"when"`
			Extra int       `json:"extra"`
		}{},
		"an optional field always sent": struct {
			ID    string    `json:"id"`
			When  time.Time `json:"when"`
			Extra int       `json:"extra"`
		}{},
		"a null the schema refuses": struct {
			ID    string     `json:"id"`
			When  *time.Time `json:"when"`
			Extra int        `json:"extra,omitempty"`
		}{},
	} {
		rec := &recorder{}
		c := &typeCheck{t: rec, reached: map[string]bool{}}
		c.value("T", reflect.TypeOf(typ), schema, false)
		if len(rec.errs) == 0 {
			t.Errorf("%s: the check found nothing", name)
		}
	}
	rec := &recorder{}
	c := &typeCheck{t: rec, reached: map[string]bool{}}
	c.value("T", reflect.TypeOf(struct {
		ID    string    `json:"id"`
		When  time.Time `json:"when"`
		Extra int       `json:"extra,omitempty"`
	}{}), schema, false)
	if len(rec.errs) != 0 {
		t.Errorf("a matching type: %v", rec.errs)
	}
}

// reporter is the part of testing.T the check reports to.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

type recorder struct{ errs []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, format)
}

// typeCheck compares a Go type with a schema, recursively.
type typeCheck struct {
	t reporter
	// reached records the named types of api met on the way.
	reached map[string]bool
}

var timeType = reflect.TypeOf(time.Time{})

// value checks that values of rt encode to what s allows; omitted is true
// when an empty value of rt is left out of the object holding it.
// rawJSONType is json.RawMessage: JSON kept as it came.
var rawJSONType = reflect.TypeOf(json.RawMessage(nil))

func (c *typeCheck) value(path string, rt reflect.Type, s *openapi3.Schema, omitted bool) {
	c.t.Helper()
	nullable := false
	if rt.Kind() == reflect.Pointer {
		rt, nullable = rt.Elem(), true
	}
	if elem, ok := apiFieldOf(rt); ok {
		// A Field sends null to clear: whether the schema allows it is the
		// API's rule (some fields cannot be cleared), not the type's.
		rt, omitted = elem, true
	}
	if rt.PkgPath() == reflect.TypeOf(api.Meta{}).PkgPath() && rt.Name() != "" {
		c.reached[rt.Name()] = true
	}
	if nullable && !omitted && !allows(s, "null") {
		c.t.Errorf("%s: a nil pointer encodes as null, which the schema does not allow", path)
	}
	switch {
	case rt == rawJSONType:
		// A json.RawMessage is JSON as it came: the schema says which.
		if len(types(s)) == 0 {
			c.t.Errorf("%s: a json.RawMessage the schema gives no type", path)
		}
	case rt == timeType:
		if !allows(s, "string") || s.Format != "date-time" {
			c.t.Errorf("%s: a time.Time, the schema says %v format %q (want string, date-time)", path, types(s), s.Format)
		}
	case rt.Kind() == reflect.String:
		c.want(path, rt, s, "string")
	case rt.Kind() == reflect.Bool:
		c.want(path, rt, s, "boolean")
	case rt.Kind() >= reflect.Int && rt.Kind() <= reflect.Uint64:
		c.want(path, rt, s, "integer")
	case rt.Kind() == reflect.Slice:
		c.want(path, rt, s, "array")
		if s.Items != nil && s.Items.Value != nil {
			c.value(path+"[]", rt.Elem(), s.Items.Value, false)
		}
	case rt.Kind() == reflect.Map:
		c.want(path, rt, s, "object")
		if ap := s.AdditionalProperties.Schema; ap != nil && ap.Value != nil && rt.Elem().Kind() != reflect.Interface {
			c.value(path+"{}", rt.Elem(), ap.Value, false)
		}
	case rt.Kind() == reflect.Struct:
		c.want(path, rt, s, "object")
		c.object(path, rt, s)
	default:
		c.t.Errorf("%s: the check knows no Go type %s", path, rt)
	}
}

// want reports when s has types and none of them is typ. A schema without a
// type (a const, an enum) is checked by the description's own tests.
func (c *typeCheck) want(path string, rt reflect.Type, s *openapi3.Schema, typ string) {
	c.t.Helper()
	if s.Type != nil && !s.Type.IsEmpty() && !s.Type.Includes(typ) {
		c.t.Errorf("%s: a Go %s, the schema says %v (want %s)", path, rt, types(s), typ)
	}
	if s.Type == nil || s.Type.IsEmpty() {
		if s.Const == nil && len(s.Enum) == 0 && s.AllOf == nil && s.OneOf == nil && s.AnyOf == nil {
			c.t.Errorf("%s: the schema has no type", path)
		}
	}
}

// object checks a struct's JSON fields against an object schema's
// properties, both ways, and omitempty against required.
func (c *typeCheck) object(path string, rt reflect.Type, s *openapi3.Schema) {
	c.t.Helper()
	for i := range rt.NumField() {
		// An embedded struct's fields are the object's own (QRStyle).
		if f := rt.Field(i); f.Anonymous && f.Type.PkgPath() == reflect.TypeOf(api.Meta{}).PkgPath() {
			c.reached[f.Type.Name()] = true
		}
	}
	fields := jsonFields(rt)
	for _, f := range fields {
		p := s.Properties[f.name]
		if p == nil || p.Value == nil {
			c.t.Errorf("%s.%s: a field of %s that the schema has no property for", path, f.name, rt)
			continue
		}
		required := slices.Contains(s.Required, f.name)
		switch {
		case f.omitted && required:
			c.t.Errorf("%s.%s: left out when empty (omitempty/omitzero), but the schema requires it", path, f.name)
		case !f.omitted && !required && len(s.Required) > 0:
			c.t.Errorf("%s.%s: always sent, but the schema does not require it", path, f.name)
		}
		c.value(path+"."+f.name, f.typ, p.Value, f.omitted)
	}
	for name := range s.Properties {
		if !slices.ContainsFunc(fields, func(f jsonField) bool { return f.name == name }) {
			c.t.Errorf("%s.%s: a property of the schema that %s has no field for", path, name, rt)
		}
	}
}

type jsonField struct {
	name    string
	typ     reflect.Type
	omitted bool
}

// jsonFields lists the members encoding/json writes for a struct, the
// fields of embedded structs (QRStyle) included.
func jsonFields(rt reflect.Type) []jsonField {
	var out []jsonField
	for i := range rt.NumField() {
		f := rt.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		omitted := slices.Contains(strings.Split(opts, ","), "omitempty") || slices.Contains(strings.Split(opts, ","), "omitzero")
		out = append(out, jsonField{name: name, typ: f.Type, omitted: omitted})
	}
	return out
}

// apiFieldOf returns T when rt is api.Field[T].
func apiFieldOf(rt reflect.Type) (reflect.Type, bool) {
	if rt.PkgPath() != reflect.TypeOf(api.Meta{}).PkgPath() || !strings.HasPrefix(rt.Name(), "Field[") {
		return nil, false
	}
	m, ok := rt.MethodByName("Value")
	if !ok {
		return nil, false
	}
	return m.Type.Out(0), true
}

func allows(s *openapi3.Schema, typ string) bool {
	return s.Type != nil && s.Type.Includes(typ)
}

func types(s *openapi3.Schema) []string {
	if s.Type == nil {
		return nil
	}
	return s.Type.Slice()
}

// apiStructTypes lists the exported struct types declared in api's files.
func apiStructTypes(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../../api/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("cannot find api's files: %v", err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, sp := range g.Specs {
				ts := sp.(*ast.TypeSpec)
				if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Name.IsExported() && ts.TypeParams == nil {
					names = append(names, ts.Name.Name)
				}
			}
		}
	}
	return names
}
