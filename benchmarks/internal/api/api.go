// Package api is the little of the platform's REST API and Prometheus
// metrics the benchmarks need: create a link, read its click count and its
// statistics, scrape a /metrics page.
package api

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"time"

	wire "shortlink.dev/api"
)

// NewKey returns an API key value of the shape CONTRACT §3 fixes ("sl_" and
// 40 base62 characters), for SHORTLINK_BOOTSTRAP_API_KEY.
func NewKey() string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := []byte("sl_")
	for range 40 {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		b = append(b, alphabet[n.Int64()])
	}
	return string(b)
}

// Client speaks to one control plane's API with one key.
type Client struct {
	// Base is the API's base URL, ending in /api/v1.
	Base string
	Key  string
	HTTP *http.Client
}

// New returns a client of the API at base with key.
func New(base, key string) *Client {
	return &Client{Base: base, Key: key, HTTP: &http.Client{Timeout: 60 * time.Second}}
}

// Link is a link record as the API shows it.
type Link = wire.Link

// Stats are a link's statistics as the API shows them.
type Stats = wire.Stats

// CreateLink creates a link on the default domain.
func (c *Client) CreateLink(ctx context.Context, slug, destination string) (Link, error) {
	body, _ := json.Marshal(map[string]string{"slug": slug, "destinationUrl": destination})
	var l Link
	if err := c.do(ctx, http.MethodPost, "/links", body, http.StatusCreated, &l); err != nil {
		return l, fmt.Errorf("create link %s: %w", slug, err)
	}
	return l, nil
}

// CreateLimitedLink creates a link on the default domain that stops
// redirecting after limit counted clicks (clickLimit).
func (c *Client) CreateLimitedLink(ctx context.Context, slug, destination string, limit int64) (Link, error) {
	body, _ := json.Marshal(map[string]any{"slug": slug, "destinationUrl": destination, "clickLimit": limit})
	var l Link
	if err := c.do(ctx, http.MethodPost, "/links", body, http.StatusCreated, &l); err != nil {
		return l, fmt.Errorf("create link %s: %w", slug, err)
	}
	return l, nil
}

// SetDestination changes a link's destinationUrl (PATCH /links/{id}); the
// API answers once the change reached the edges (docs/edge.md).
func (c *Client) SetDestination(ctx context.Context, id, destination string) (Link, error) {
	body, _ := json.Marshal(map[string]string{"destinationUrl": destination})
	var l Link
	if err := c.do(ctx, http.MethodPatch, "/links/"+id, body, http.StatusOK, &l); err != nil {
		return l, fmt.Errorf("update link %s: %w", id, err)
	}
	return l, nil
}

// Link reads a link.
func (c *Client) Link(ctx context.Context, id string) (Link, error) {
	var l Link
	if err := c.do(ctx, http.MethodGet, "/links/"+id, nil, http.StatusOK, &l); err != nil {
		return l, fmt.Errorf("get link %s: %w", id, err)
	}
	return l, nil
}

// Stats reads a link's statistics over the default range (the last 30
// days) and says how long the request took, from sending it to having read
// the whole answer.
func (c *Client) Stats(ctx context.Context, id string) (Stats, time.Duration, error) {
	var s Stats
	start := time.Now()
	err := c.do(ctx, http.MethodGet, "/links/"+id+"/stats", nil, http.StatusOK, &s)
	took := time.Since(start)
	if err != nil {
		return s, took, fmt.Errorf("get stats of %s: %w", id, err)
	}
	return s, took, nil
}

// Analytics are a workspace's analytics as the API shows them.
type Analytics = wire.Analytics

// Analytics reads the workspace's analytics grouped by groupBy over the
// default range (the last 30 days), and says how long the request took,
// as Stats does.
func (c *Client) Analytics(ctx context.Context, groupBy string) (Analytics, time.Duration, error) {
	var a Analytics
	start := time.Now()
	err := c.do(ctx, http.MethodGet, "/analytics?groupBy="+groupBy, nil, http.StatusOK, &a)
	took := time.Since(start)
	if err != nil {
		return a, took, fmt.Errorf("get analytics by %s: %w", groupBy, err)
	}
	return a, took, nil
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, want int, data any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("status %d, want %d: %s", resp.StatusCode, want, strings.TrimSpace(string(b)))
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("cannot read the answer: %w", err)
	}
	return json.Unmarshal(env.Data, data)
}

// The edge's metrics the benchmarks read (edge/redirect/metrics.go).
const (
	EdgeRedirects    = `shortlink_edge_requests_total{outcome="redirect"}`
	EdgeGone         = `shortlink_edge_requests_total{outcome="gone"}`
	EdgeNotFound     = `shortlink_edge_requests_total{outcome="not_found"}`
	EdgeErrors       = `shortlink_edge_requests_total{outcome="error"}`
	EdgeCacheHits    = `shortlink_edge_cache_hits_total`
	EdgeCacheMisses  = `shortlink_edge_cache_misses_total`
	EdgeDropped      = `shortlink_edge_clicks_dropped_total`
	EdgeFilterReady  = `shortlink_edge_filter_ready`
	EdgeFilterAbsent = `shortlink_edge_filter_absent_total`
	EdgeStoreLookups = `shortlink_edge_store_lookups_total`
	EdgeStoreKeys    = `shortlink_edge_store_lookup_keys_total`
)

// Metrics is a scraped /metrics page: each sample's value by its name and
// labels as the page writes them (`name` or `name{label="v",…}`).
type Metrics map[string]float64

// Scrape reads a Prometheus text page.
func Scrape(ctx context.Context, url string) (Metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: status %d", url, resp.StatusCode)
	}
	return ParseMetrics(resp.Body)
}

// ParseMetrics reads the samples of a Prometheus text page; comments and
// timestamps are skipped.
func ParseMetrics(r io.Reader) (Metrics, error) {
	m := Metrics{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		// The value follows the name, or the closing brace of the labels.
		nameEnd := strings.LastIndexByte(line, '}')
		if nameEnd < 0 {
			nameEnd = strings.IndexByte(line, ' ') - 1
			if nameEnd < 0 {
				return nil, fmt.Errorf("cannot read metrics line %q", line)
			}
		}
		name := line[:nameEnd+1]
		f := strings.Fields(line[nameEnd+1:])
		if len(f) == 0 {
			return nil, fmt.Errorf("cannot read metrics line %q", line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("cannot read metrics line %q: %w", line, err)
		}
		m[name] = v
	}
	return m, sc.Err()
}

// Int is the sample's value as an integer (0 when absent).
func (m Metrics) Int(name string) int64 { return int64(m[name]) }
