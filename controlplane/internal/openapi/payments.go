package openapi

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
)

// PaymentInfo is an operation's x-payment-info: what a payable operation
// charges (spec §4.7).
type PaymentInfo struct {
	Intent      string `json:"intent"`
	Method      string `json:"method"`
	Description string `json:"description"`
	// Amount is in the currency's smallest unit (cents).
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

// payments returns the description of the payable operations alone (those
// with x-payment-info) from the complete one: their paths, the components
// they use and nothing else.
func payments(full obj) (obj, error) {
	doc, err := clone(full)
	if err != nil {
		return nil, err
	}
	paths := obj{}
	for path, item := range doc["paths"].(obj) {
		kept := obj{}
		for method, o := range item.(obj) {
			if op, ok := o.(obj); ok && op["x-payment-info"] != nil {
				kept[method] = op
			}
		}
		if len(kept) == 0 {
			continue
		}
		if ps, ok := item.(obj)["parameters"]; ok {
			kept["parameters"] = ps
		}
		paths[path] = kept
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no operation carries x-payment-info")
	}
	doc["paths"] = paths
	doc["info"] = obj{
		"title":   "shortlink payable operations",
		"version": Version,
		"description": "The subscription checkout operations of the shortlink API, each with its payment descriptor " +
			"(`x-payment-info`: intent, method, description, amount in cents, currency). They need an API key with " +
			"`billing:write` and answer a bare `{sessionId, url}`: open `url` to pay. The whole API is described at /api/v1/openapi.json.",
	}
	doc["tags"] = []any{obj{"name": "Billing", "description": "Subscription checkout (payable operations)."}}

	// Keep the components the paths use, following references between them.
	comp := doc["components"].(obj)
	used := map[string]bool{}
	queue := refsIn(paths)
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		if used[r] {
			continue
		}
		used[r] = true
		m := refPattern.FindStringSubmatch(r)
		kind, ok := comp[m[1]].(obj)
		if !ok || kind[m[2]] == nil {
			return nil, fmt.Errorf("dangling reference %s", r)
		}
		queue = append(queue, refsIn(kind[m[2]])...)
	}
	kept := obj{"securitySchemes": comp["securitySchemes"]}
	for kind, v := range comp {
		if kind == "securitySchemes" {
			continue
		}
		sub := obj{}
		for name, c := range v.(obj) {
			if used["#/components/"+kind+"/"+name] {
				sub[name] = c
			}
		}
		if len(sub) > 0 {
			kept[kind] = sub
		}
	}
	doc["components"] = kept
	return doc, nil
}

var refPattern = regexp.MustCompile(`^#/components/([A-Za-z]+)/([A-Za-z0-9_.-]+)$`)

// refsIn lists the component references ($ref) within v, sorted.
func refsIn(v any) []string {
	seen := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch t := v.(type) {
		case obj:
			if r, ok := t["$ref"].(string); ok && refPattern.MatchString(r) {
				seen[r] = true
			}
			for _, x := range t {
				walk(x)
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(v)
	out := make([]string, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	sort.Strings(out)
	return slices.Clip(out)
}

func clone(v obj) (obj, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out obj
	return out, json.Unmarshal(b, &out)
}
