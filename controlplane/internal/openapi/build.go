// Package openapi is the OpenAPI 3.1 description of the control plane's API,
// served at /api/v1/openapi.json, the payable operations alone at
// /api/v1/openapi/payments.json, and a reference page of it at /api/v1/docs.
//
// openapi.yaml is written by hand and holds what is particular to each
// operation. Build completes it with what every operation shares, so that
// it cannot be forgotten on one of them: the rate-limit and request-id
// headers on every response, the error responses every route can give
// (with the error codes of each status), the Idempotency-Key header and its
// 409 on every POST, and the {success, data, meta} envelope of every resource
// named under x-envelopes.
package openapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

//go:embed openapi.yaml
var source []byte

// Version is info.version of both descriptions: the version of API v1
// (CONTRACT §11), not of the build.
const Version = "1.0.0"

type obj = map[string]any

// ErrorCodes maps each HTTP status of an error answer to the error codes
// it carries (CONTRACT §2, §13 and docs/api.md).
var ErrorCodes = map[int][]string{
	400: {"VALIDATION_ERROR", "INVALID_URL", "SLUG_RESERVED", "INVALID_EXPIRATION", "PASSWORD_TOO_SHORT", "DOMAIN_NOT_VERIFIED"},
	401: {"UNAUTHORIZED"},
	402: {"LIMIT_REACHED"},
	403: {"FORBIDDEN"},
	404: {"NOT_FOUND"},
	405: {"METHOD_NOT_ALLOWED"},
	409: {"SLUG_EXISTS", "DOMAIN_EXISTS", "IDEMPOTENCY_KEY_REUSED", "IDEMPOTENCY_KEY_IN_USE", "CONFLICT", "LAST_OWNER", "MEMBER_EXISTS"},
	410: {"INVITE_EXPIRED"},
	413: {"PAYLOAD_TOO_LARGE"},
	429: {"RATE_LIMITED"},
	500: {"INTERNAL_ERROR"},
	502: {"PAYMENT_PROCESSOR_ERROR"},
	503: {"SERVICE_UNAVAILABLE"},
}

// errorResponses names the response component of each error status.
var errorResponses = []struct {
	status      int
	name, about string
}{
	{400, "BadRequest", "The input is invalid: a body or query parameter breaks a rule (details.fields names each), or the query string cannot be read."},
	{401, "Unauthorized", "No API key where one is needed, an unknown key, or a malformed Authorization header."},
	{402, "PaymentRequired", "The plan's limit of active links is reached."},
	{403, "Forbidden", "The API key lacks the permission the operation needs."},
	{404, "NotFound", "No such resource in the workspace (a resource of another workspace is not found too)."},
	{405, "MethodNotAllowed", "The path exists with other methods (listed in Allow)."},
	{409, "Conflict", "The slug or domain is taken, the Idempotency-Key was used with another request or is still in use, the change would leave the workspace without an owner, or the person is a member already."},
	{410, "Gone", "The invite expired: ask for a new one."},
	{413, "PayloadTooLarge", "The body is larger than 1 MiB."},
	{429, "TooManyRequests", "Over the rate limit; retry after Retry-After seconds."},
	{500, "InternalError", "A bug; the message quotes the request id (X-Request-ID) that the log carries."},
	{502, "BadGateway", "The payment processor (Stripe) refused the checkout or could not be reached; the message says which (Stripe's reason is in the operator's log, under the request id)."},
	{503, "ServiceUnavailable", "The database cannot be reached (restarting, say); retry after Retry-After seconds. A write answered so was not done, unless the connection broke during its commit: read it back before sending it again."},
}

func responseName(status int) string {
	for _, e := range errorResponses {
		if e.status == status {
			return e.name
		}
	}
	panic(fmt.Sprintf("openapi: no response component for status %d", status))
}

// Build returns the complete description as JSON.
func Build() ([]byte, error) {
	doc, err := build()
	if err != nil {
		return nil, err
	}
	return encode(doc)
}

func build() (obj, error) {
	var doc obj
	if err := yaml.Unmarshal(source, &doc); err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	comp := doc["components"].(obj)
	schemas := comp["schemas"].(obj)
	responses := comp["responses"].(obj)
	params := comp["parameters"].(obj)
	headers := obj{}
	comp["headers"] = headers

	headers["X-RateLimit-Limit"] = obj{"required": true, "description": "Requests allowed in the current one-minute window.", "schema": obj{"type": "integer", "minimum": 1}}
	headers["X-RateLimit-Remaining"] = obj{"required": true, "description": "Requests left in the window.", "schema": obj{"type": "integer", "minimum": 0}}
	headers["X-RateLimit-Reset"] = obj{"required": true, "description": "When the window resets, in Unix seconds.", "schema": obj{"type": "integer"}}
	headers["Retry-After"] = obj{"required": true, "description": "Seconds until a retry may succeed.", "schema": obj{"type": "integer", "minimum": 0}}
	headers["X-Request-ID"] = obj{"required": true, "description": "The request's id, quoted in logs and in 500 messages (a well-formed incoming X-Request-ID is kept).", "schema": obj{"type": "string"}}

	params["IdempotencyKey"] = obj{
		"name": "Idempotency-Key", "in": "header", "required": false,
		"description": "Makes the POST safe to retry (as Stripe's): the same key (per workspace, kept 24 h) with the same request returns the first answer again, with `Idempotent-Replayed: true`, and does nothing again; with another request: 409 IDEMPOTENCY_KEY_REUSED; while the first still runs: 409 IDEMPOTENCY_KEY_IN_USE with Retry-After. Server errors, 401 and 403 are not kept. Ignored without an API key.",
		"schema":      obj{"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x20-\\x7E]+$"},
	}

	var all []string
	for _, e := range errorResponses {
		all = append(all, ErrorCodes[e.status]...)
	}
	schemas["ErrorCode"] = obj{"type": "string", "enum": all}
	schemas["Error"] = obj{
		"type": "object", "additionalProperties": false, "required": []any{"code", "message", "details"},
		"properties": obj{
			"code":    ref("schemas", "ErrorCode"),
			"message": obj{"type": "string", "minLength": 1},
			"details": obj{
				"type":        "object",
				"description": "Always an object; input errors put fields there: each offending field with its message.",
				"properties":  obj{"fields": obj{"type": "object", "additionalProperties": obj{"type": "string"}}},
			},
		},
	}
	schemas["ErrorEnvelope"] = obj{
		"type": "object", "additionalProperties": false, "required": []any{"success", "error"},
		"properties": obj{"success": obj{"const": false}, "error": ref("schemas", "Error")},
	}
	for _, e := range errorResponses {
		codes := ErrorCodes[e.status]
		hs := rateHeaders()
		if e.status == 429 || e.status == 503 {
			hs["Retry-After"] = ref("headers", "Retry-After")
		}
		responses[e.name] = obj{
			"description": fmt.Sprintf("%s Codes: %s.", e.about, strings.Join(codes, ", ")),
			"headers":     hs,
			"content": obj{"application/json": obj{"schema": obj{"allOf": []any{
				ref("schemas", "ErrorEnvelope"),
				obj{"properties": obj{"error": obj{"properties": obj{"code": obj{"enum": toAny(codes)}}}}},
			}}}},
		}
	}

	for _, n := range doc["x-envelopes"].([]any) {
		name := n.(string)
		schemas[name+"Response"] = obj{
			"type": "object", "additionalProperties": false, "required": []any{"success", "data"},
			"properties": obj{"success": obj{"const": true}, "data": ref("schemas", name)},
		}
		schemas[name+"ListResponse"] = obj{
			"type": "object", "additionalProperties": false, "required": []any{"success", "data", "meta"},
			"properties": obj{
				"success": obj{"const": true},
				"data":    obj{"type": "array", "items": ref("schemas", name)},
				"meta":    ref("schemas", "Meta"),
			},
		}
	}
	delete(doc, "x-envelopes")

	// Component responses that operations use for success get the headers too.
	for _, r := range responses {
		if _, isError := r.(obj)["headers"]; !isError {
			r.(obj)["headers"] = rateHeaders()
		}
	}

	for path, item := range doc["paths"].(obj) {
		for method, o := range item.(obj) {
			op, ok := o.(obj)
			if !ok || method == "parameters" {
				continue
			}
			if err := complete(method, op); err != nil {
				return nil, fmt.Errorf("%s %s: %w", strings.ToUpper(method), path, err)
			}
		}
	}
	return doc, nil
}

// complete adds to one operation what every operation shares.
func complete(method string, op obj) error {
	if _, ok := op["operationId"]; !ok {
		return fmt.Errorf("no operationId")
	}
	perms, ok := op["x-permissions"].([]any)
	if !ok {
		return fmt.Errorf("no x-permissions (write [] for a public operation)")
	}
	responses := op["responses"].(obj)
	standard := op["x-standard-errors"] != false
	delete(op, "x-standard-errors")
	idempotent := op["x-idempotency"] != false
	delete(op, "x-idempotency")

	if standard {
		for _, r := range responses {
			if r, ok := r.(obj); ok {
				if _, isRef := r["$ref"]; !isRef {
					hs, _ := r["headers"].(obj)
					if hs == nil {
						hs = obj{}
					}
					for k, v := range rateHeaders() {
						hs[k] = v
					}
					r["headers"] = hs
				}
			}
		}
		need := []int{400, 401, 429, 500, 503}
		if len(perms) > 0 {
			need = append(need, 403)
			var names []string
			for _, p := range perms {
				names = append(names, "`"+p.(string)+"`")
			}
			desc, _ := op["description"].(string)
			op["description"] = strings.TrimSpace(strings.TrimSpace(desc) + "\n\nPermission: " + strings.Join(names, ", ") + ".")
		} else if op["security"] != nil && len(op["security"].([]any)) != 0 {
			desc, _ := op["description"].(string)
			op["description"] = strings.TrimSpace(strings.TrimSpace(desc) + "\n\nPublic: no API key needed.")
		}
		if _, ok := op["requestBody"]; ok {
			need = append(need, 413)
		}
		if method == "post" && idempotent {
			need = append(need, 409)
			ps, _ := op["parameters"].([]any)
			op["parameters"] = append(ps, ref("parameters", "IdempotencyKey"))
		}
		for _, status := range need {
			key := fmt.Sprint(status)
			if _, ok := responses[key]; !ok {
				responses[key] = ref("responses", responseName(status))
			}
		}
	} else {
		for _, r := range responses {
			if r, ok := r.(obj); ok {
				r["headers"] = obj{"X-Request-ID": ref("headers", "X-Request-ID")}
			}
		}
	}
	return nil
}

func rateHeaders() obj {
	return obj{
		"X-RateLimit-Limit":     ref("headers", "X-RateLimit-Limit"),
		"X-RateLimit-Remaining": ref("headers", "X-RateLimit-Remaining"),
		"X-RateLimit-Reset":     ref("headers", "X-RateLimit-Reset"),
		"X-Request-ID":          ref("headers", "X-Request-ID"),
	}
}

func ref(kind, name string) obj { return obj{"$ref": "#/components/" + kind + "/" + name} }

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// topOrder is the order of a description's top-level members in the JSON
// (the rest follow, sorted); inner objects are written with sorted keys.
var topOrder = []string{"openapi", "info", "jsonSchemaDialect", "servers", "security", "tags", "paths", "components"}

// encode writes doc as indented JSON with its top-level members in the
// usual order.
func encode(doc obj) ([]byte, error) {
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := slices.Index(topOrder, keys[i]), slices.Index(topOrder, keys[j])
		if a < 0 {
			a = len(topOrder)
		}
		if b < 0 {
			b = len(topOrder)
		}
		if a != b {
			return a < b
		}
		return keys[i] < keys[j]
	})
	var buf bytes.Buffer
	buf.WriteString("{\n")
	for i, k := range keys {
		var v bytes.Buffer
		enc := json.NewEncoder(&v)
		enc.SetEscapeHTML(false)
		enc.SetIndent("  ", "  ")
		if err := enc.Encode(doc[k]); err != nil {
			return nil, fmt.Errorf("encode %s: %w", k, err)
		}
		kb, _ := json.Marshal(k)
		fmt.Fprintf(&buf, "  %s: %s", kb, bytes.TrimRight(v.Bytes(), "\n"))
		if i < len(keys)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString("}\n")
	return buf.Bytes(), nil
}
