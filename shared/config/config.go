// Package config reads the platform's settings from the environment. Every
// setting is one row of a typed table with its default and its check; a bad
// value stops the process at start with one line naming the setting.
package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"shortlink.dev/shared/webhook"
	"shortlink.dev/shared/workspace"
)

// Config is every setting of CONTRACT §1.
type Config struct {
	APIAddr         string
	EdgeAddr        string
	AnalyticsAddr   string
	DataDir         string
	DefaultDomain   string
	ShortURLScheme  string
	BootstrapAPIKey string
	BootstrapPlan   workspace.Plan
	DatabaseURL     string
	KafkaBrokers    []string
	ClickHouseURL   string
	// ClickHouseCluster names the ClickHouse cluster (in the servers'
	// remote_servers) whose replicated and sharded tables the analytics
	// use; empty for a single server (SHORTLINK_CLICKHOUSE_CLUSTER).
	ClickHouseCluster string
	RedisURL          string
	GeoIPDB           string
	TrustedProxies    []netip.Prefix
	PlanLinkLimits    map[workspace.Plan]int // -1: unlimited
	PlanRateLimits    map[workspace.Plan]int // requests per minute
	// AuditRetention is how long each plan's workspaces keep their audit
	// log, in days; -1 keeps it for ever (SHORTLINK_AUDIT_RETENTION).
	AuditRetention   map[workspace.Plan]int
	DNSResolver      string
	WebhookRetries   []time.Duration
	WebhookAllowPriv bool
	WebhookCAFile    string
	// WebhookTimeout bounds one delivery attempt (SHORTLINK_WEBHOOK_TIMEOUT).
	WebhookTimeout time.Duration
	// WebhookConcurrency bounds the attempts one control plane makes at
	// once (SHORTLINK_WEBHOOK_CONCURRENCY).
	WebhookConcurrency int
	// WebhookEndpointConcurrency bounds one webhook's attempts in flight
	// across all control planes (SHORTLINK_WEBHOOK_ENDPOINT_CONCURRENCY).
	WebhookEndpointConcurrency int
	// WebhookWorkspaceConcurrency bounds one workspace's attempts in flight,
	// its webhooks together, across all control planes
	// (SHORTLINK_WEBHOOK_WORKSPACE_CONCURRENCY).
	WebhookWorkspaceConcurrency int
	// WebhookBreaker is the circuit breaker (SHORTLINK_WEBHOOK_BREAKER).
	WebhookBreaker      webhook.Breaker
	BillingProcessor    string
	StripeSecretKey     string
	StripeAPIBase       string
	StripeWebhookSecret string
	// StripePrices maps catalog price ids (price_pro_monthly, …) to the Stripe
	// price ids Checkout sells; a catalog id without one is sent to Stripe as is.
	StripePrices map[string]string
	// EdgeCacheBytes bounds the memory of an edge's compiled links (and
	// absences), in bytes (SHORTLINK_EDGE_CACHE_BYTES; else
	// SHORTLINK_EDGE_CACHE_LINKS × EdgeCacheBytesPerLink, at least 64 KiB; else
	// DefaultEdgeCacheBytes).
	EdgeCacheBytes int64
	// EdgeCacheLinks is SHORTLINK_EDGE_CACHE_LINKS, the count of links the
	// cache was bounded by before it was bounded by bytes; 0 when unset.
	// It only sets EdgeCacheBytes.
	EdgeCacheLinks int
	// ClicksLostAfter is how long after a limited link's ledger charged a
	// click the click may still reach the store; later, it counts in
	// shortlink_clicks_lost_total (SHORTLINK_CLICKS_LOST_AFTER).
	ClicksLostAfter time.Duration
	// ClickSpoolMaxBytes bounds the edge's click spool on disk
	// (SHORTLINK_CLICK_SPOOL_MAX_BYTES); clicks beyond it are dropped and
	// counted.
	ClickSpoolMaxBytes int64
	// ClickFlushInterval is the longest a click waits in the edge's memory
	// before it is handed on (SHORTLINK_CLICK_FLUSH_INTERVAL): to Kafka or
	// the spool, or to the standalone click store. A kill -9 loses about
	// that much of the clicks.
	ClickFlushInterval time.Duration
	// WebhookLease is how long a webhook dispatcher holds a delivery it
	// claimed (SHORTLINK_WEBHOOK_LEASE): a killed dispatcher's deliveries
	// are taken over when it ends. Tests shorten it.
	WebhookLease time.Duration
	// OIDC is the dashboard's single sign-on (SHORTLINK_OIDC_*, oidc.go).
	OIDC OIDC
	// SMTP is where invites are emailed from (SHORTLINK_SMTP_URL, smtp.go);
	// nil when unset: invite links are then only shown to copy.
	SMTP *SMTP
	// PublicURL is the dashboard's public origin (SHORTLINK_PUBLIC_URL),
	// "" when unset: see DashboardURL.
	PublicURL string
	// ImportMaxBytes bounds the file of an import (SHORTLINK_IMPORT_MAX_BYTES).
	ImportMaxBytes int64
	// ImportPause is the rest an import job takes between two batches of
	// rows (SHORTLINK_IMPORT_PAUSE), so that redirects and the API keep
	// their share of the database.
	ImportPause time.Duration
	// ImportLease is how long a control plane holds an import job past its
	// last batch (SHORTLINK_IMPORT_LEASE): a killed one's job is taken over
	// then. Tests shorten it.
	ImportLease time.Duration
}

// DefaultEdgeCacheBytes is the default bound of an edge's link cache when
// neither SHORTLINK_EDGE_CACHE_BYTES nor SHORTLINK_EDGE_CACHE_LINKS is set:
// 64 MiB of live heap, about 315,000 links of the usual shape (a link's
// compact form and its slot in the cache's table, docs/edge.md). The process's
// RSS is up to twice its live heap with Go's default GOGC.
const DefaultEdgeCacheBytes = 64 << 20

// EdgeCacheBytesPerLink is what SHORTLINK_EDGE_CACHE_LINKS counts a link
// as, in bytes of the cache's bound, and what the edge's table of links is
// made for: about what a link of the usual shape costs (docs/benchmarks.md,
// "Edge memory per cached link": 196 bytes of live heap).
const EdgeCacheBytesPerLink = 200

// minEdgeCacheBytes and maxEdgeCacheBytes bound SHORTLINK_EDGE_CACHE_BYTES.
const (
	minEdgeCacheBytes = 1 << 16
	maxEdgeCacheBytes = 1 << 40
)

// DefaultClickSpoolMaxBytes is SHORTLINK_CLICK_SPOOL_MAX_BYTES's default:
// 1 GiB of clicks on disk, about 8 million clicks of the usual size, hours
// of a busy edge's clicks while Kafka is away.
const DefaultClickSpoolMaxBytes = 1 << 30

// maxEdgeCacheLinks bounds SHORTLINK_EDGE_CACHE_LINKS: 2^26 links is
// about 25 GiB.
const maxEdgeCacheLinks = 1 << 26

// option is one setting: its variable, default, and how to parse it into c.
type option struct {
	name, def string
	parse     func(c *Config, v string) error
}

var options = []option{
	{"SHORTLINK_API_ADDR", "127.0.0.1:8080", func(c *Config, v string) error { return hostPort(&c.APIAddr, v) }},
	{"SHORTLINK_EDGE_ADDR", "127.0.0.1:8081", func(c *Config, v string) error { return hostPort(&c.EdgeAddr, v) }},
	{"SHORTLINK_ANALYTICS_ADDR", "127.0.0.1:8082", func(c *Config, v string) error { return hostPort(&c.AnalyticsAddr, v) }},
	{"SHORTLINK_DATA_DIR", "./data", func(c *Config, v string) error { return nonEmpty(&c.DataDir, v) }},
	{"SHORTLINK_DEFAULT_DOMAIN", "localhost:8081", func(c *Config, v string) error { return domainName(&c.DefaultDomain, v) }},
	{"SHORTLINK_SHORT_URL_SCHEME", "http", func(c *Config, v string) error {
		if v != "http" && v != "https" {
			return fmt.Errorf("must be http or https")
		}
		c.ShortURLScheme = v
		return nil
	}},
	{"SHORTLINK_BOOTSTRAP_API_KEY", "", func(c *Config, v string) error {
		if v != "" && (!strings.HasPrefix(v, "sl_") || len(v) < 35 || !isBase62(v[3:])) {
			return fmt.Errorf("must be sl_ followed by at least 32 base62 characters")
		}
		c.BootstrapAPIKey = v
		return nil
	}},
	{"SHORTLINK_BOOTSTRAP_PLAN", "enterprise", func(c *Config, v string) (err error) {
		c.BootstrapPlan, err = workspace.ParsePlan(v)
		return err
	}},
	{"SHORTLINK_DATABASE_URL", "", func(c *Config, v string) error {
		if v != "" && !strings.HasPrefix(v, "postgres://") && !strings.HasPrefix(v, "postgresql://") {
			return fmt.Errorf("must be a postgres:// URL, or empty for SQLite under SHORTLINK_DATA_DIR")
		}
		c.DatabaseURL = v
		return nil
	}},
	{"SHORTLINK_KAFKA_BROKERS", "", func(c *Config, v string) error {
		for _, b := range splitList(v) {
			if _, _, err := net.SplitHostPort(b); err != nil {
				return fmt.Errorf("broker %q is not host:port", b)
			}
			c.KafkaBrokers = append(c.KafkaBrokers, b)
		}
		return nil
	}},
	{"SHORTLINK_CLICKHOUSE_URL", "", func(c *Config, v string) error {
		return urlWithScheme(&c.ClickHouseURL, v, "clickhouse")
	}},
	{"SHORTLINK_CLICKHOUSE_CLUSTER", "", func(c *Config, v string) error {
		if v != "" && !clusterName.MatchString(v) {
			return fmt.Errorf("%q is not a cluster name: use letters, digits and _", v)
		}
		c.ClickHouseCluster = v
		return nil
	}},
	{"SHORTLINK_REDIS_URL", "", func(c *Config, v string) error {
		return urlWithScheme(&c.RedisURL, v, "redis", "rediss")
	}},
	{"SHORTLINK_GEOIP_DB", "", func(c *Config, v string) error {
		if v != "" {
			if _, err := os.Stat(v); err != nil {
				return fmt.Errorf("cannot read the GeoIP database: %w", err)
			}
		}
		c.GeoIPDB = v
		return nil
	}},
	{"SHORTLINK_TRUSTED_PROXIES", "", func(c *Config, v string) error {
		for _, s := range splitList(v) {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				a, aerr := netip.ParseAddr(s)
				if aerr != nil {
					return fmt.Errorf("%q is not a CIDR", s)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			c.TrustedProxies = append(c.TrustedProxies, p.Masked())
		}
		return nil
	}},
	{"SHORTLINK_PLAN_LINK_LIMITS", "free=1000,pro=25000,business=250000,scale=1000000", func(c *Config, v string) error {
		m, err := planMap(v)
		if err != nil {
			return err
		}
		c.PlanLinkLimits = map[workspace.Plan]int{workspace.Enterprise: -1}
		for p, n := range m {
			c.PlanLinkLimits[p] = n
		}
		for _, p := range workspace.Plans {
			if _, ok := c.PlanLinkLimits[p]; !ok {
				return fmt.Errorf("missing a limit for plan %s", p)
			}
		}
		return nil
	}},
	{"SHORTLINK_PLAN_RATE_LIMITS", "free=60,pro=300,business=1000,scale=3000,enterprise=10000", func(c *Config, v string) error {
		m, err := planMap(v)
		if err != nil {
			return err
		}
		for _, p := range workspace.Plans {
			if m[p] <= 0 {
				return fmt.Errorf("missing a positive rate for plan %s", p)
			}
		}
		c.PlanRateLimits = m
		return nil
	}},
	{"SHORTLINK_AUDIT_RETENTION", "free=30,pro=365,business=365,scale=730", func(c *Config, v string) error {
		m, err := planMap(v)
		if err != nil {
			return err
		}
		c.AuditRetention = map[workspace.Plan]int{workspace.Enterprise: -1}
		for p, n := range m {
			if n == 0 {
				return fmt.Errorf("%s=0: keep at least 1 day (-1 keeps the log for ever)", p)
			}
			c.AuditRetention[p] = n
		}
		for _, p := range workspace.Plans {
			if _, ok := c.AuditRetention[p]; !ok {
				return fmt.Errorf("missing the days to keep for plan %s (days, or -1 for ever)", p)
			}
		}
		return nil
	}},
	{"SHORTLINK_DNS_RESOLVER", "", func(c *Config, v string) error {
		if v != "" {
			if _, _, err := net.SplitHostPort(v); err != nil {
				return fmt.Errorf("must be host:port")
			}
		}
		c.DNSResolver = v
		return nil
	}},
	{"SHORTLINK_WEBHOOK_RETRY_SCHEDULE", "5s,30s,2m,10m,1h", func(c *Config, v string) error {
		parts := splitList(v)
		if len(parts) != 5 {
			return fmt.Errorf("must list exactly 5 delays, like 5s,30s,2m,10m,1h")
		}
		for _, s := range parts {
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 {
				return fmt.Errorf("%q is not a duration", s)
			}
			c.WebhookRetries = append(c.WebhookRetries, d)
		}
		return nil
	}},
	{"SHORTLINK_WEBHOOK_TIMEOUT", "10s", func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > time.Minute {
			return fmt.Errorf("must be a duration from 1ms to 1m")
		}
		c.WebhookTimeout = d
		return nil
	}},
	{"SHORTLINK_WEBHOOK_CONCURRENCY", "256", func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100_000 {
			return fmt.Errorf("must be a whole number of attempts from 1 to 100000")
		}
		c.WebhookConcurrency = n
		return nil
	}},
	{"SHORTLINK_WEBHOOK_ENDPOINT_CONCURRENCY", strconv.Itoa(webhook.DefaultEndpointConcurrency), func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return fmt.Errorf("must be a whole number of attempts from 1 to 1000")
		}
		c.WebhookEndpointConcurrency = n
		return nil
	}},
	{"SHORTLINK_WEBHOOK_WORKSPACE_CONCURRENCY", strconv.Itoa(webhook.DefaultWorkspaceConcurrency), func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100_000 {
			return fmt.Errorf("must be a whole number of attempts from 1 to 100000")
		}
		c.WebhookWorkspaceConcurrency = n
		return nil
	}},
	{"SHORTLINK_WEBHOOK_BREAKER", "5,30s,10m", func(c *Config, v string) error {
		if v == "off" {
			c.WebhookBreaker = webhook.Breaker{}
			return nil
		}
		parts := splitList(v)
		if len(parts) != 3 {
			return fmt.Errorf("must be off, or the failures that open it, the first cool-down and the longest, like 5,30s,10m")
		}
		n, err := strconv.Atoi(parts[0])
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not a number of failures", parts[0])
		}
		first, err1 := time.ParseDuration(parts[1])
		longest, err2 := time.ParseDuration(parts[2])
		if err1 != nil || err2 != nil || first <= 0 || longest < first {
			return fmt.Errorf("the cool-downs must be durations, the first no longer than the longest")
		}
		c.WebhookBreaker = webhook.Breaker{Threshold: n, Cooldown: first, MaxCooldown: longest}
		return nil
	}},
	{"SHORTLINK_EDGE_CACHE_BYTES", "", func(c *Config, v string) error {
		if v == "" {
			return nil // Load resolves it
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < minEdgeCacheBytes || n > maxEdgeCacheBytes {
			return fmt.Errorf("must be a whole number of bytes from %d to %d", minEdgeCacheBytes, int64(maxEdgeCacheBytes))
		}
		c.EdgeCacheBytes = n
		return nil
	}},
	{"SHORTLINK_EDGE_CACHE_LINKS", "", func(c *Config, v string) error {
		if v == "" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxEdgeCacheLinks {
			return fmt.Errorf("must be a whole number of links from 1 to %d", maxEdgeCacheLinks)
		}
		c.EdgeCacheLinks = n
		return nil
	}},
	{"SHORTLINK_CLICKS_LOST_AFTER", "10m", func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return fmt.Errorf("must be a duration of at least 1s, like 10m")
		}
		c.ClicksLostAfter = d
		return nil
	}},
	{"SHORTLINK_CLICK_SPOOL_MAX_BYTES", strconv.Itoa(DefaultClickSpoolMaxBytes), func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return fmt.Errorf("must be a positive whole number of bytes")
		}
		c.ClickSpoolMaxBytes = n
		return nil
	}},
	{"SHORTLINK_CLICK_FLUSH_INTERVAL", "200ms", func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Millisecond || d > time.Minute {
			return fmt.Errorf("must be a duration from 1ms to 1m, like 200ms")
		}
		c.ClickFlushInterval = d
		return nil
	}},
	{"SHORTLINK_WEBHOOK_LEASE", "1m", func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("must be a positive duration, like 1m")
		}
		c.WebhookLease = d
		return nil
	}},
	{"SHORTLINK_IMPORT_MAX_BYTES", strconv.Itoa(50 << 20), func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > 1<<30 {
			return fmt.Errorf("must be a whole number of bytes from 1 to 1073741824")
		}
		c.ImportMaxBytes = n
		return nil
	}},
	{"SHORTLINK_IMPORT_PAUSE", "20ms", func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > time.Minute {
			return fmt.Errorf("must be a duration from 0s to 1m, like 20ms")
		}
		c.ImportPause = d
		return nil
	}},
	{"SHORTLINK_IMPORT_LEASE", "1m", func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return fmt.Errorf("must be a duration of at least 1s, like 1m")
		}
		c.ImportLease = d
		return nil
	}},
	{"SHORTLINK_WEBHOOK_ALLOW_PRIVATE", "false", func(c *Config, v string) (err error) {
		c.WebhookAllowPriv, err = strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("must be true or false")
		}
		return nil
	}},
	{"SHORTLINK_WEBHOOK_CA_FILE", "", func(c *Config, v string) error {
		if v != "" {
			if _, err := os.Stat(v); err != nil {
				return fmt.Errorf("cannot read the CA file: %w", err)
			}
		}
		c.WebhookCAFile = v
		return nil
	}},
	{"SHORTLINK_SMTP_URL", "", func(c *Config, v string) (err error) {
		c.SMTP, err = ParseSMTPURL(v)
		return err
	}},
	{"SHORTLINK_PUBLIC_URL", "", func(c *Config, v string) error {
		if v == "" {
			return nil
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("must be the dashboard's public origin, like https://links.example.com")
		}
		c.PublicURL = u.Scheme + "://" + u.Host
		return nil
	}},
	{"SHORTLINK_BILLING_PROCESSOR", "local", func(c *Config, v string) error {
		if v != "local" && v != "stripe" {
			return fmt.Errorf("must be local or stripe")
		}
		c.BillingProcessor = v
		return nil
	}},
	{"SHORTLINK_STRIPE_SECRET_KEY", "", func(c *Config, v string) error { c.StripeSecretKey = v; return nil }},
	{"SHORTLINK_STRIPE_API_BASE", "", func(c *Config, v string) error { return urlWithScheme(&c.StripeAPIBase, v, "http", "https") }},
	{"SHORTLINK_STRIPE_WEBHOOK_SECRET", "", func(c *Config, v string) error { c.StripeWebhookSecret = v; return nil }},
	{"SHORTLINK_STRIPE_PRICES", "", func(c *Config, v string) error {
		for _, kv := range splitList(v) {
			k, p, ok := strings.Cut(kv, "=")
			k, p = strings.TrimSpace(k), strings.TrimSpace(p)
			if !ok || p == "" || strings.ContainsAny(p, " \t") {
				return fmt.Errorf("%q is not catalogPrice=stripePrice, like price_pro_monthly=price_1Abc", kv)
			}
			if !slices.Contains(CatalogPrices, k) {
				return fmt.Errorf("%q is no catalog price (want one of %s)", k, strings.Join(CatalogPrices, ", "))
			}
			if _, dup := c.StripePrices[k]; dup {
				return fmt.Errorf("%s is mapped twice", k)
			}
			if c.StripePrices == nil {
				c.StripePrices = map[string]string{}
			}
			c.StripePrices[k] = p
		}
		return nil
	}},
}

// CatalogPrices are the ids of the price catalog (CONTRACT §11) that
// SHORTLINK_STRIPE_PRICES may map; the catalog itself, with plans and
// amounts, is controlplane/internal/billing's, whose tests keep the two equal.
var CatalogPrices = []string{
	"price_pro_monthly", "price_pro_annual", "price_business_monthly",
	"price_business_annual", "price_scale_monthly", "price_scale_annual",
}

// secret settings are never repeated in an error: they may hold passwords.
var secret = map[string]bool{
	"SHORTLINK_BOOTSTRAP_API_KEY": true, "SHORTLINK_DATABASE_URL": true, "SHORTLINK_CLICKHOUSE_URL": true,
	"SHORTLINK_REDIS_URL": true, "SHORTLINK_SMTP_URL": true, "SHORTLINK_STRIPE_SECRET_KEY": true, "SHORTLINK_STRIPE_WEBHOOK_SECRET": true,
}

// Load reads every setting from getenv (os.Getenv when nil). The error names the
// first bad setting: "SHORTLINK_API_ADDR=abc: must be host:port".
func Load(getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	c := &Config{}
	for _, o := range options {
		v := strings.TrimSpace(getenv(o.name))
		if v == "" {
			v = o.def
		}
		if err := o.parse(c, v); err != nil {
			if secret[o.name] {
				return nil, fmt.Errorf("invalid setting %s (value hidden): %w", o.name, err)
			}
			return nil, fmt.Errorf("invalid setting %s=%q: %w", o.name, v, err)
		}
	}
	switch {
	case c.EdgeCacheBytes > 0 && c.EdgeCacheLinks > 0:
		return nil, fmt.Errorf("invalid settings SHORTLINK_EDGE_CACHE_BYTES and SHORTLINK_EDGE_CACHE_LINKS: set one (the bytes; the links are the older form)")
	case c.EdgeCacheLinks > 0:
		// At least the least of SHORTLINK_EDGE_CACHE_BYTES: a cache of a
		// few links' bytes would hold none (its table and its shards).
		c.EdgeCacheBytes = max(int64(c.EdgeCacheLinks)*EdgeCacheBytesPerLink, minEdgeCacheBytes)
	case c.EdgeCacheBytes == 0:
		c.EdgeCacheBytes = DefaultEdgeCacheBytes
	}
	if c.BillingProcessor == "stripe" && c.StripeSecretKey == "" {
		return nil, fmt.Errorf("invalid setting SHORTLINK_STRIPE_SECRET_KEY: required when SHORTLINK_BILLING_PROCESSOR=stripe")
	}
	if c.ClickHouseCluster != "" && c.ClickHouseURL == "" {
		return nil, fmt.Errorf("invalid setting SHORTLINK_CLICKHOUSE_CLUSTER: it names a ClickHouse cluster, " +
			"which needs SHORTLINK_CLICKHOUSE_URL (one or more of its servers)")
	}
	if err := c.checkOIDC(); err != nil {
		return nil, err
	}
	return c, nil
}

// Names lists every setting's variable name with its default, in table order.
func Names() [][2]string {
	out := make([][2]string, len(options))
	for i, o := range options {
		out[i] = [2]string{o.name, o.def}
	}
	return out
}

// LinkLimit returns the plan's link limit (-1: unlimited).
func (c *Config) LinkLimit(p workspace.Plan) int {
	if n, ok := c.PlanLinkLimits[p]; ok {
		return n
	}
	return c.PlanLinkLimits[workspace.Free]
}

// RateLimit returns the plan's API requests per minute.
func (c *Config) RateLimit(p workspace.Plan) int {
	if n, ok := c.PlanRateLimits[p]; ok {
		return n
	}
	return c.PlanRateLimits[workspace.Free]
}

// ShortURL returns the public address of a slug on a domain.
func (c *Config) ShortURL(domain, slug string) string {
	return c.ShortURLScheme + "://" + domain + "/" + slug
}

func hostPort(dst *string, v string) error {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("must be host:port")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	*dst = v
	return nil
}

func nonEmpty(dst *string, v string) error {
	if v == "" {
		return fmt.Errorf("must not be empty")
	}
	*dst = v
	return nil
}

func domainName(dst *string, v string) error {
	u, err := url.Parse("http://" + v)
	if err != nil || u.Host != v || u.Hostname() == "" || u.Path != "" || strings.ContainsAny(v, "/?#@ ") {
		return fmt.Errorf("must be a host name with an optional port, like sho.rt or localhost:8081")
	}
	if port := u.Port(); port != "" || strings.HasSuffix(v, ":") {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %q is not a number from 1 to 65535", port)
		}
	}
	*dst = strings.ToLower(v)
	return nil
}

func urlWithScheme(dst *string, v string, schemes ...string) error {
	if v == "" {
		*dst = ""
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || u.Host == "" {
		return fmt.Errorf("must be a URL like %s://host:port", schemes[0])
	}
	for _, s := range schemes {
		if u.Scheme == s {
			*dst = v
			return nil
		}
	}
	return fmt.Errorf("must be a %s:// URL", schemes[0])
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func planMap(v string) (map[workspace.Plan]int, error) {
	m := map[workspace.Plan]int{}
	for _, kv := range splitList(v) {
		k, n, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not plan=number", kv)
		}
		p, err := workspace.ParsePlan(strings.TrimSpace(k))
		if err != nil {
			return nil, err
		}
		i, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil || i < -1 {
			return nil, fmt.Errorf("%q: %q is not a number (-1 for unlimited)", kv, n)
		}
		m[p] = i
	}
	return m, nil
}

func isBase62(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// DashboardURL returns the origin people reach the dashboard at, for links
// the server sends (the emailed invite): SHORTLINK_PUBLIC_URL, else
// SHORTLINK_API_ADDR when it names a fixed address (http), else "" (not
// known). Never a request's Host header, which its sender chooses.
func (c *Config) DashboardURL() string {
	if c.PublicURL != "" {
		return c.PublicURL
	}
	host, port, err := net.SplitHostPort(c.APIAddr)
	if ip := net.ParseIP(host); err != nil || host == "" || (ip != nil && ip.IsUnspecified()) || port == "0" {
		return ""
	}
	return "http://" + net.JoinHostPort(host, port)
}

// clusterName is what SHORTLINK_CLICKHOUSE_CLUSTER accepts: the analytics
// write it into their tables' DDL.
var clusterName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
