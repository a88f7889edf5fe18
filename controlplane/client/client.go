// Package client is a Go client of the shortlink API (v1), written on its
// OpenAPI description (GET /api/v1/openapi.json): every operation is a method
// that takes a context, sends the API key as a bearer token and returns typed
// values, or an *Error carrying the envelope's code, message and details.
//
//	c, err := client.New("http://127.0.0.1:8080/api/v1", os.Getenv("SHORTLINK_API_KEY"))
//	l, err := c.CreateLink(ctx, client.LinkInput{DestinationURL: "https://example.com"})
//	var apiErr *client.Error
//	if errors.As(err, &apiErr) && apiErr.Code == client.CodeSlugExists { … }
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"shortlink.dev/api"
)

// DefaultBaseURL is the API base of a server started with the default settings.
const DefaultBaseURL = "http://127.0.0.1:8080/api/v1"

// Client calls the API. It is safe for concurrent use.
type Client struct {
	base      string
	key       string
	http      *http.Client
	userAgent string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends requests with h instead of a client with a 30 s timeout.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithUserAgent sets the User-Agent of every request.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the API at baseURL (ending in /api/v1, like
// DefaultBaseURL) that authenticates with apiKey; an empty key reaches the
// public operations only.
func New(baseURL, apiKey string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("client: base URL %q: %w", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http(s)://host[:port]/api/v1", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("client: base URL %q: no query or fragment", baseURL)
	}
	c := &Client{base: u.String(), key: apiKey, http: &http.Client{Timeout: 30 * time.Second}, userAgent: "shortlink-go-client/1"}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// BaseURL is the API base the client calls.
func (c *Client) BaseURL() string { return c.base }

type idempotencyKey struct{}

// WithIdempotencyKey returns ctx carrying an Idempotency-Key for the POST
// made with it: a retry with the same key and body returns the first answer
// and does nothing again (the same key with another body is a 409
// IDEMPOTENCY_KEY_REUSED).
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKey{}, key)
}

// Meta is a list's page: its number and size, the total count and whether
// more pages follow.
type Meta = api.Meta

// Page asks for one page of a list; zero values take the server's defaults
// (page 1, 20 per page; at most 100).
type Page struct {
	Page, PerPage int
}

func (p Page) query(q url.Values) {
	if p.Page > 0 {
		q.Set("page", strconv.Itoa(p.Page))
	}
	if p.PerPage > 0 {
		q.Set("perPage", strconv.Itoa(p.PerPage))
	}
}

// call is one request: method and path below the base, query, JSON body
// (nil: none) and where its answer goes.
type call struct {
	method, path string
	query        url.Values
	body         any
	// data receives the envelope's data (or the whole body when bare).
	data any
	// meta receives the envelope's meta.
	meta *Meta
	// bare: the success body is the object itself, without the envelope.
	bare bool
	// raw receives the success body as it is, with its Content-Type.
	raw *rawBody
	// form, when set, is the body as it is (a multipart form), sent with
	// formType as its Content-Type, in place of body.
	form     []byte
	formType string
}

type rawBody struct {
	body        []byte
	contentType string
	// disposition is the Content-Disposition header.
	disposition string
}

// path joins escaped segments: path("links", id, "stats") → /links/{id}/stats.
func path(segments ...string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

func (c *Client) newRequest(ctx context.Context, cl call) (*http.Request, error) {
	u := c.base + cl.path
	if len(cl.query) > 0 {
		u += "?" + cl.query.Encode()
	}
	var body io.Reader
	if cl.form != nil {
		body = bytes.NewReader(cl.form)
	} else if cl.body != nil {
		b, err := json.Marshal(cl.body)
		if err != nil {
			return nil, fmt.Errorf("encode the request body: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u, body)
	if err != nil {
		return nil, err
	}
	switch {
	case cl.form != nil:
		req.Header.Set("Content-Type", cl.formType)
	case body != nil:
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	if k, ok := ctx.Value(idempotencyKey{}).(string); ok && k != "" && cl.method == http.MethodPost {
		req.Header.Set("Idempotency-Key", k)
	}
	return req, nil
}

// do sends the call and decodes its answer; an error answer is an *Error.
func (c *Client) do(ctx context.Context, cl call) error {
	req, err := c.newRequest(ctx, cl)
	if err != nil {
		return err
	}
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", cl.method, req.URL.Path, err)
	}
	if res.StatusCode >= 400 {
		return errorOf(res, body)
	}
	if cl.raw != nil {
		cl.raw.body, cl.raw.contentType = body, res.Header.Get("Content-Type")
		cl.raw.disposition = res.Header.Get("Content-Disposition")
		return nil
	}
	if res.StatusCode == http.StatusNoContent || cl.data == nil {
		return nil
	}
	if cl.bare {
		if err := json.Unmarshal(body, cl.data); err != nil {
			return fmt.Errorf("%s %s: decode the answer: %w", cl.method, req.URL.Path, err)
		}
		return nil
	}
	var env struct {
		Success bool            `json:"success"`
		Data    json.RawMessage `json:"data"`
		Meta    *Meta           `json:"meta"`
	}
	if err := json.Unmarshal(body, &env); err != nil || !env.Success {
		return fmt.Errorf("%s %s: the answer (%d) is not a success envelope: %.200s", cl.method, req.URL.Path, res.StatusCode, body)
	}
	if err := json.Unmarshal(env.Data, cl.data); err != nil {
		return fmt.Errorf("%s %s: decode the answer's data: %w", cl.method, req.URL.Path, err)
	}
	if cl.meta != nil && env.Meta != nil {
		*cl.meta = *env.Meta
	}
	return nil
}

// Error codes of the API (the envelope's error.code).
const (
	CodeValidation           = "VALIDATION_ERROR"
	CodeInvalidURL           = "INVALID_URL"
	CodeSlugReserved         = "SLUG_RESERVED"
	CodeSlugExists           = "SLUG_EXISTS"
	CodeInvalidExpiration    = "INVALID_EXPIRATION"
	CodePasswordTooShort     = "PASSWORD_TOO_SHORT"
	CodeDomainNotVerified    = "DOMAIN_NOT_VERIFIED"
	CodeDomainExists         = "DOMAIN_EXISTS"
	CodeUnauthorized         = "UNAUTHORIZED"
	CodeLimitReached         = "LIMIT_REACHED"
	CodeForbidden            = "FORBIDDEN"
	CodeNotFound             = "NOT_FOUND"
	CodeMethodNotAllowed     = "METHOD_NOT_ALLOWED"
	CodePayloadTooLarge      = "PAYLOAD_TOO_LARGE"
	CodeRateLimited          = "RATE_LIMITED"
	CodeIdempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED"
	CodeIdempotencyKeyInUse  = "IDEMPOTENCY_KEY_IN_USE"
	CodeConflict             = "CONFLICT"
	CodeInternal             = "INTERNAL_ERROR"
)

// Error is an error answer of the API: its HTTP status and the envelope's
// error.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is the machine-readable code (the Code… constants).
	Code string
	// Message is the human-readable explanation.
	Message string
	// Details is error.details as sent; Fields is its "fields" member: each
	// offending input field with its message.
	Details map[string]any
	Fields  map[string]string
	// RequestID is the X-Request-ID the server logged the request with.
	RequestID string
	// RetryAfter is, on a 429, how long to wait before retrying.
	RetryAfter time.Duration
}

// Error implements error.
func (e *Error) Error() string {
	s := fmt.Sprintf("shortlink API: %d %s: %s", e.Status, e.Code, e.Message)
	if len(e.Fields) > 0 && !strings.Contains(e.Message, ":") {
		s += fmt.Sprintf(" %v", e.Fields)
	}
	return s
}

// IsCode reports whether err is an API error with the code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// IsNotFound reports whether err is a 404 NOT_FOUND answer.
func IsNotFound(err error) bool { return IsCode(err, CodeNotFound) }

func errorOf(res *http.Response, body []byte) *Error {
	e := &Error{Status: res.StatusCode, RequestID: res.Header.Get("X-Request-ID")}
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	var env struct {
		Error *api.Error `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || env.Error == nil || env.Error.Code == "" {
		e.Code = "HTTP_" + strconv.Itoa(res.StatusCode)
		e.Message = strings.TrimSpace(fmt.Sprintf("%s %.200s", http.StatusText(res.StatusCode), body))
		return e
	}
	e.Code, e.Message, e.Details = env.Error.Code, env.Error.Message, env.Error.Details
	if f, ok := e.Details["fields"].(map[string]any); ok {
		e.Fields = map[string]string{}
		for k, v := range f {
			e.Fields[k] = fmt.Sprint(v)
		}
	}
	return e
}

// Field is an optional member of an update (PATCH) body that tells apart
// "leave as is" (the zero Field, left out of the body), "clear" (Null, sent
// as null) and "set" (Set).
type Field[T any] = api.Field[T]

// Set returns a field set to v.
func Set[T any](v T) Field[T] { return api.Set(v) }

// Null returns a field that clears the value (JSON null).
func Null[T any]() Field[T] { return api.Null[T]() }
