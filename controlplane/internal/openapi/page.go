package openapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"html"
	"html/template"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

//go:embed page.html
var pageSource string

var pageTemplate = template.Must(template.New("page").Parse(pageSource))

type pageData struct {
	Title, Version string
	Summary        string
	Description    template.HTML
	Groups         []group
	Schemas        []schemaView
}

type group struct {
	Name, Anchor, Description string
	Ops                       []opView
}

type opView struct {
	ID, Method, Path, Summary string
	Description               template.HTML
	Permissions               []string
	Public                    bool
	Payment                   *PaymentInfo
	Params                    []fieldView
	Body                      []contentView
	BodyRequired              bool
	Responses                 []responseView
}

type fieldView struct {
	Name, In     string
	Type         template.HTML
	Required     bool
	Description  template.HTML
	Nullable     bool
	Enum, Format string
}

type contentView struct {
	MediaType string
	Type      template.HTML
}

type responseView struct {
	Status      string
	Description template.HTML
	Content     []contentView
	Headers     []string
}

type schemaView struct {
	Name        string
	Type        template.HTML
	Description template.HTML
	Props       []fieldView
}

// renderPage renders the reference page of doc.
func renderPage(doc *openapi3.T) ([]byte, error) {
	d := pageData{Title: doc.Info.Title, Version: doc.Info.Version, Summary: doc.Info.Summary, Description: prose(doc.Info.Description)}
	byTag := map[string]*group{}
	for _, t := range doc.Tags {
		d.Groups = append(d.Groups, group{Name: t.Name, Anchor: "tag-" + anchor(t.Name), Description: t.Description})
	}
	for i := range d.Groups {
		byTag[d.Groups[i].Name] = &d.Groups[i]
	}
	paths := doc.Paths.InMatchingOrder()
	sort.Strings(paths)
	for _, path := range paths {
		item := doc.Paths.Value(path)
		for _, method := range []string{"GET", "POST", "PATCH", "PUT", "DELETE"} {
			op := item.GetOperation(method)
			if op == nil {
				continue
			}
			v := opView{ID: op.OperationID, Method: method, Path: path, Summary: op.Summary, Description: prose(op.Description)}
			if perms, ok := op.Extensions["x-permissions"].([]any); ok {
				for _, p := range perms {
					v.Permissions = append(v.Permissions, p.(string))
				}
			}
			v.Public = op.Security != nil && (len(*op.Security) == 0 || len((*op.Security)[0]) == 0)
			if raw, ok := op.Extensions["x-payment-info"]; ok {
				var p PaymentInfo
				b, _ := json.Marshal(raw)
				if json.Unmarshal(b, &p) == nil {
					v.Payment = &p
				}
			}
			for _, p := range append(slices.Clone(item.Parameters), op.Parameters...) {
				v.Params = append(v.Params, fieldOf(p.Value.Name, p.Value.Schema, p.Value.Required, p.Value.Description, p.Value.In))
			}
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				v.BodyRequired = op.RequestBody.Value.Required
				v.Body = contents(op.RequestBody.Value.Content)
			}
			codes := slices.Sorted(func(yield func(string) bool) {
				for c := range op.Responses.Map() {
					if !yield(c) {
						return
					}
				}
			})
			for _, c := range codes {
				r := op.Responses.Value(c)
				rv := responseView{Status: c}
				if r.Value != nil {
					if r.Value.Description != nil {
						rv.Description = prose(*r.Value.Description)
					}
					rv.Content = contents(r.Value.Content)
					for h := range r.Value.Headers {
						if !strings.HasPrefix(h, "X-RateLimit-") && h != "X-Request-ID" {
							rv.Headers = append(rv.Headers, h)
						}
					}
					sort.Strings(rv.Headers)
				}
				v.Responses = append(v.Responses, rv)
			}
			tag := "Other"
			if len(op.Tags) > 0 {
				tag = op.Tags[0]
			}
			g, ok := byTag[tag]
			if !ok {
				d.Groups = append(d.Groups, group{Name: tag, Anchor: "tag-" + anchor(tag)})
				byTag = map[string]*group{}
				for i := range d.Groups {
					byTag[d.Groups[i].Name] = &d.Groups[i]
				}
				g = byTag[tag]
			}
			g.Ops = append(g.Ops, v)
		}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range doc.Components.Schemas {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range names {
		s := doc.Components.Schemas[n]
		sv := schemaView{Name: n, Type: typeOf(&openapi3.SchemaRef{Value: s.Value}), Description: prose(s.Value.Description)}
		props := slices.Sorted(func(yield func(string) bool) {
			for p := range s.Value.Properties {
				if !yield(p) {
					return
				}
			}
		})
		for _, p := range props {
			ps := s.Value.Properties[p]
			desc := ""
			if ps.Value != nil {
				desc = ps.Value.Description
			}
			sv.Props = append(sv.Props, fieldOf(p, ps, slices.Contains(s.Value.Required, p), desc, ""))
		}
		d.Schemas = append(d.Schemas, sv)
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, d); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func contents(c openapi3.Content) []contentView {
	var out []contentView
	for _, mt := range slices.Sorted(func(yield func(string) bool) {
		for k := range c {
			if !yield(k) {
				return
			}
		}
	}) {
		cv := contentView{MediaType: mt}
		if c[mt].Schema != nil {
			cv.Type = typeOf(c[mt].Schema)
		}
		out = append(out, cv)
	}
	return out
}

func fieldOf(name string, s *openapi3.SchemaRef, required bool, desc, in string) fieldView {
	f := fieldView{Name: name, In: in, Required: required, Description: prose(desc)}
	if s != nil {
		f.Type = typeOf(s)
		if s.Value != nil {
			if f.Description == "" && s.Ref == "" {
				f.Description = prose(s.Value.Description)
			}
			f.Format = s.Value.Format
		}
	}
	return f
}

// typeOf describes a schema in a few words, linking the named ones.
func typeOf(s *openapi3.SchemaRef) template.HTML {
	if s == nil {
		return "any"
	}
	if s.Ref != "" {
		name := s.Ref[strings.LastIndex(s.Ref, "/")+1:]
		return template.HTML(`<a href="#schema-` + html.EscapeString(name) + `">` + html.EscapeString(name) + `</a>`)
	}
	v := s.Value
	if v == nil {
		return "any"
	}
	var parts []string
	if v.Const != nil {
		b, _ := json.Marshal(v.Const)
		return template.HTML("<code>" + html.EscapeString(string(b)) + "</code>")
	}
	for _, sub := range v.AllOf {
		if t := typeOf(sub); t != "any" && t != "object" {
			parts = append(parts, string(t))
		}
	}
	if len(parts) > 0 {
		return template.HTML(strings.Join(parts, " with "))
	}
	if len(v.OneOf) > 0 {
		for _, sub := range v.OneOf {
			parts = append(parts, string(typeOf(sub)))
		}
		return template.HTML("one of: " + strings.Join(parts, " | "))
	}
	nullable := false
	if v.Type != nil {
		for _, t := range *v.Type {
			switch t {
			case "null":
				nullable = true
			case "array":
				parts = append(parts, "array of "+string(typeOf(v.Items)))
			case "object":
				if v.AdditionalProperties.Schema != nil {
					parts = append(parts, "map of "+string(typeOf(v.AdditionalProperties.Schema)))
				} else {
					parts = append(parts, "object")
				}
			default:
				parts = append(parts, t)
			}
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "any")
	}
	out := strings.Join(parts, " or ")
	if v.Format != "" {
		out += " (" + html.EscapeString(v.Format) + ")"
	}
	if len(v.Enum) > 0 {
		var vals []string
		for _, e := range v.Enum {
			vals = append(vals, "<code>"+html.EscapeString(strings.Trim(strconv.Quote(toString(e)), `"`))+"</code>")
		}
		out += ": " + strings.Join(vals, ", ")
	}
	if nullable {
		out += " or null"
	}
	return template.HTML(out)
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

var (
	codeSpan = regexp.MustCompile("`([^`]+)`")
	strong   = regexp.MustCompile(`\*\*([^*]+)\*\*`)
)

// prose turns a description's text into HTML: escaped, paragraphs at blank
// lines, `code` and **strong** spans.
func prose(s string) template.HTML {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	var out strings.Builder
	for _, para := range strings.Split(s, "\n\n") {
		p := html.EscapeString(strings.Join(strings.Fields(para), " "))
		p = codeSpan.ReplaceAllString(p, "<code>$1</code>")
		p = strong.ReplaceAllString(p, "<strong>$1</strong>")
		out.WriteString("<p>" + p + "</p>")
	}
	return template.HTML(out.String())
}

func anchor(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return '-'
	}, s)
}
