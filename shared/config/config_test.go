package config

import (
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"shortlink.dev/shared/webhook"
	"shortlink.dev/shared/workspace"
)

// env returns a getenv over a fixed map.
func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestLoadDefaults(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatalf("Load with no settings: %v", err)
	}
	// CONTRACT §1, settings table.
	want := &Config{
		APIAddr:          "127.0.0.1:8080",
		EdgeAddr:         "127.0.0.1:8081",
		AnalyticsAddr:    "127.0.0.1:8082",
		DataDir:          "./data",
		DefaultDomain:    "localhost:8081",
		ShortURLScheme:   "http",
		BootstrapPlan:    workspace.Enterprise,
		BillingProcessor: "local",
		PlanLinkLimits: map[workspace.Plan]int{
			workspace.Free: 1000, workspace.Pro: 25000, workspace.Business: 250000,
			workspace.Scale: 1000000, workspace.Enterprise: -1,
		},
		PlanRateLimits: map[workspace.Plan]int{
			workspace.Free: 60, workspace.Pro: 300, workspace.Business: 1000,
			workspace.Scale: 3000, workspace.Enterprise: 10000,
		},
		AuditRetention: map[workspace.Plan]int{
			workspace.Free: 30, workspace.Pro: 365, workspace.Business: 365,
			workspace.Scale: 730, workspace.Enterprise: -1,
		},
		WebhookRetries:     []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, time.Hour},
		EdgeCacheBytes:     64 << 20,
		ClicksLostAfter:    10 * time.Minute,
		ClickSpoolMaxBytes: 1 << 30,
		ClickFlushInterval: 200 * time.Millisecond,
		WebhookLease:       time.Minute,
		ImportMaxBytes:     50 << 20, ImportPause: 20 * time.Millisecond, ImportLease: time.Minute,
		WebhookTimeout: 10 * time.Second, WebhookConcurrency: 256, WebhookEndpointConcurrency: 2,
		WebhookWorkspaceConcurrency: 32,
		WebhookBreaker:              webhook.Breaker{Threshold: 5, Cooldown: 30 * time.Second, MaxCooldown: 10 * time.Minute},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", c, want)
	}
	if c.BootstrapAPIKey != "" || c.DatabaseURL != "" || c.KafkaBrokers != nil || c.ClickHouseURL != "" ||
		c.RedisURL != "" || c.GeoIPDB != "" || c.TrustedProxies != nil || c.DNSResolver != "" ||
		c.WebhookAllowPriv || c.WebhookCAFile != "" {
		t.Errorf("optional settings not empty by default: %+v", c)
	}
	for _, p := range workspace.Plans {
		if c.RateLimit(p) != want.PlanRateLimits[p] {
			t.Errorf("RateLimit(%s) = %d", p, c.RateLimit(p))
		}
		if c.LinkLimit(p) != want.PlanLinkLimits[p] {
			t.Errorf("LinkLimit(%s) = %d", p, c.LinkLimit(p))
		}
	}
	if got := c.ShortURL(c.DefaultDomain, "abc"); got != "http://localhost:8081/abc" {
		t.Errorf("ShortURL = %q", got)
	}
}

func TestNamesMatchContract(t *testing.T) {
	want := map[string]string{
		"SHORTLINK_API_ADDR":                      "127.0.0.1:8080",
		"SHORTLINK_EDGE_ADDR":                     "127.0.0.1:8081",
		"SHORTLINK_ANALYTICS_ADDR":                "127.0.0.1:8082",
		"SHORTLINK_DATA_DIR":                      "./data",
		"SHORTLINK_DEFAULT_DOMAIN":                "localhost:8081",
		"SHORTLINK_SHORT_URL_SCHEME":              "http",
		"SHORTLINK_BOOTSTRAP_API_KEY":             "",
		"SHORTLINK_BOOTSTRAP_PLAN":                "enterprise",
		"SHORTLINK_DATABASE_URL":                  "",
		"SHORTLINK_KAFKA_BROKERS":                 "",
		"SHORTLINK_CLICKHOUSE_URL":                "",
		"SHORTLINK_CLICKHOUSE_CLUSTER":            "",
		"SHORTLINK_REDIS_URL":                     "",
		"SHORTLINK_GEOIP_DB":                      "",
		"SHORTLINK_TRUSTED_PROXIES":               "",
		"SHORTLINK_PLAN_LINK_LIMITS":              "free=1000,pro=25000,business=250000,scale=1000000",
		"SHORTLINK_PLAN_RATE_LIMITS":              "free=60,pro=300,business=1000,scale=3000,enterprise=10000",
		"SHORTLINK_DNS_RESOLVER":                  "",
		"SHORTLINK_AUDIT_RETENTION":               "free=30,pro=365,business=365,scale=730",
		"SHORTLINK_WEBHOOK_RETRY_SCHEDULE":        "5s,30s,2m,10m,1h",
		"SHORTLINK_WEBHOOK_ALLOW_PRIVATE":         "false",
		"SHORTLINK_WEBHOOK_CA_FILE":               "",
		"SHORTLINK_BILLING_PROCESSOR":             "local",
		"SHORTLINK_STRIPE_SECRET_KEY":             "",
		"SHORTLINK_STRIPE_API_BASE":               "",
		"SHORTLINK_STRIPE_WEBHOOK_SECRET":         "",
		"SHORTLINK_STRIPE_PRICES":                 "",
		"SHORTLINK_EDGE_CACHE_BYTES":              "",
		"SHORTLINK_EDGE_CACHE_LINKS":              "",
		"SHORTLINK_CLICKS_LOST_AFTER":             "10m",
		"SHORTLINK_CLICK_SPOOL_MAX_BYTES":         "1073741824",
		"SHORTLINK_CLICK_FLUSH_INTERVAL":          "200ms",
		"SHORTLINK_WEBHOOK_LEASE":                 "1m",
		"SHORTLINK_IMPORT_MAX_BYTES":              "52428800",
		"SHORTLINK_IMPORT_PAUSE":                  "20ms",
		"SHORTLINK_IMPORT_LEASE":                  "1m",
		"SHORTLINK_WEBHOOK_TIMEOUT":               "10s",
		"SHORTLINK_WEBHOOK_CONCURRENCY":           "256",
		"SHORTLINK_WEBHOOK_ENDPOINT_CONCURRENCY":  "2",
		"SHORTLINK_WEBHOOK_WORKSPACE_CONCURRENCY": "32",
		"SHORTLINK_WEBHOOK_BREAKER":               "5,30s,10m",
		"SHORTLINK_OIDC_ISSUER":                   "",
		"SHORTLINK_OIDC_CLIENT_ID":                "",
		"SHORTLINK_OIDC_CLIENT_SECRET":            "",
		"SHORTLINK_OIDC_REDIRECT_URL":             "",
		"SHORTLINK_OIDC_ALLOWED_DOMAINS":          "",
		"SHORTLINK_OIDC_DEFAULT_ROLE":             "",
		"SHORTLINK_OIDC_WORKSPACE":                "default",
		"SHORTLINK_SMTP_URL":                      "",
		"SHORTLINK_PUBLIC_URL":                    "",
	}
	got := map[string]string{}
	for _, nd := range Names() {
		if _, dup := got[nd[0]]; dup {
			t.Errorf("%s listed twice", nd[0])
		}
		got[nd[0]] = nd[1]
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Names():\n got %v\nwant %v", got, want)
	}
}

func TestLoadNilGetenvUsesEnvironment(t *testing.T) {
	t.Setenv("SHORTLINK_API_ADDR", "127.0.0.1:9999")
	c, err := Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.APIAddr != "127.0.0.1:9999" {
		t.Errorf("APIAddr = %q", c.APIAddr)
	}
}

func TestLoadRejects(t *testing.T) {
	tests := []struct {
		name, value string
		extra       map[string]string
	}{
		{"SHORTLINK_API_ADDR", "abc", nil},
		{"SHORTLINK_API_ADDR", "127.0.0.1", nil},
		{"SHORTLINK_API_ADDR", "127.0.0.1:99999", nil},
		{"SHORTLINK_API_ADDR", "127.0.0.1:-1", nil},
		{"SHORTLINK_API_ADDR", "127.0.0.1:http", nil},
		{"SHORTLINK_ANALYTICS_ADDR", "nope", nil},
		{"SHORTLINK_CLICK_SPOOL_MAX_BYTES", "0", nil},
		{"SHORTLINK_CLICK_SPOOL_MAX_BYTES", "1GiB", nil},
		{"SHORTLINK_CLICK_FLUSH_INTERVAL", "0s", nil},
		{"SHORTLINK_CLICK_FLUSH_INTERVAL", "2m", nil},
		{"SHORTLINK_WEBHOOK_LEASE", "0s", nil},
		{"SHORTLINK_IMPORT_MAX_BYTES", "0", nil},
		{"SHORTLINK_IMPORT_PAUSE", "-1s", nil},
		{"SHORTLINK_IMPORT_LEASE", "10ms", nil},
		{"SHORTLINK_WEBHOOK_LEASE", "soon", nil},
		{"SHORTLINK_EDGE_ADDR", "localhost", nil},
		{"SHORTLINK_DEFAULT_DOMAIN", "http://x/", nil},
		{"SHORTLINK_DEFAULT_DOMAIN", "x/y", nil},
		{"SHORTLINK_DEFAULT_DOMAIN", "x?y", nil},
		{"SHORTLINK_DEFAULT_DOMAIN", "x#y", nil},
		{"SHORTLINK_DEFAULT_DOMAIN", "user@x", nil},
		{"SHORTLINK_DEFAULT_DOMAIN", "a b", nil},
		{"SHORTLINK_DEFAULT_DOMAIN", ":8081", nil},
		{"SHORTLINK_DEFAULT_DOMAIN", "sho.rt:abc", nil},
		{"SHORTLINK_DEFAULT_DOMAIN", "sho.rt:", nil},
		{"SHORTLINK_DEFAULT_DOMAIN", "sho.rt:0", nil},
		{"SHORTLINK_DEFAULT_DOMAIN", "sho.rt:99999", nil},
		{"SHORTLINK_SHORT_URL_SCHEME", "ftp", nil},
		{"SHORTLINK_SHORT_URL_SCHEME", "HTTP://", nil},
		{"SHORTLINK_BOOTSTRAP_API_KEY", "short", nil},
		{"SHORTLINK_BOOTSTRAP_API_KEY", "sl_" + strings.Repeat("a", 31), nil},
		{"SHORTLINK_BOOTSTRAP_API_KEY", "xx_" + strings.Repeat("a", 32), nil},
		{"SHORTLINK_BOOTSTRAP_API_KEY", "sl_" + strings.Repeat("a", 31) + "-", nil},
		{"SHORTLINK_BOOTSTRAP_PLAN", "gold", nil},
		{"SHORTLINK_BOOTSTRAP_PLAN", "Enterprise", nil},
		{"SHORTLINK_DATABASE_URL", "mysql://x", nil},
		{"SHORTLINK_DATABASE_URL", "sqlite:///tmp/x.db", nil},
		{"SHORTLINK_KAFKA_BROKERS", "localhost", nil},
		{"SHORTLINK_KAFKA_BROKERS", "a:9092,b", nil},
		{"SHORTLINK_CLICKHOUSE_URL", "http://localhost:8123", nil},
		{"SHORTLINK_CLICKHOUSE_URL", "clickhouse:x", nil},
		{"SHORTLINK_CLICKHOUSE_CLUSTER", "my-cluster", map[string]string{"SHORTLINK_CLICKHOUSE_URL": "clickhouse://h:9000/db"}},
		{"SHORTLINK_CLICKHOUSE_CLUSTER", "shortlink", nil}, // without SHORTLINK_CLICKHOUSE_URL
		{"SHORTLINK_REDIS_URL", "memcached://localhost:11211", nil},
		{"SHORTLINK_GEOIP_DB", "/nonexistent/GeoLite2-City.mmdb", nil},
		{"SHORTLINK_TRUSTED_PROXIES", "notcidr", nil},
		{"SHORTLINK_TRUSTED_PROXIES", "10.0.0.0/8,10.0.0.0/33", nil},
		{"SHORTLINK_PLAN_LINK_LIMITS", "free=abc", nil},
		{"SHORTLINK_PLAN_LINK_LIMITS", "free=1000", nil}, // missing pro, business, scale
		{"SHORTLINK_PLAN_LINK_LIMITS", "free=1,pro=2,business=3,scale=4,gold=5", nil},
		{"SHORTLINK_PLAN_LINK_LIMITS", "free=-2,pro=2,business=3,scale=4", nil},
		{"SHORTLINK_PLAN_LINK_LIMITS", "free:1,pro=2,business=3,scale=4", nil},
		{"SHORTLINK_PLAN_RATE_LIMITS", "free=60,pro=300,business=1000,scale=3000", nil}, // no enterprise
		{"SHORTLINK_PLAN_RATE_LIMITS", "free=0,pro=300,business=1000,scale=3000,enterprise=10000", nil},
		{"SHORTLINK_PLAN_RATE_LIMITS", "free=-1,pro=300,business=1000,scale=3000,enterprise=10000", nil},
		{"SHORTLINK_PLAN_RATE_LIMITS", "free=x,pro=300,business=1000,scale=3000,enterprise=10000", nil},
		{"SHORTLINK_AUDIT_RETENTION", "free=30", nil}, // missing pro, business, scale
		{"SHORTLINK_AUDIT_RETENTION", "free=0,pro=365,business=365,scale=730", nil},
		{"SHORTLINK_AUDIT_RETENTION", "free=30d,pro=365,business=365,scale=730", nil},
		{"SHORTLINK_DNS_RESOLVER", "8.8.8.8", nil},
		{"SHORTLINK_WEBHOOK_RETRY_SCHEDULE", "5s,30s,2m,10m", nil},
		{"SHORTLINK_WEBHOOK_RETRY_SCHEDULE", "5s,30s,2m,10m,1h,2h", nil},
		{"SHORTLINK_WEBHOOK_RETRY_SCHEDULE", "5s,30s,2m,10m,soon", nil},
		{"SHORTLINK_WEBHOOK_RETRY_SCHEDULE", "5s,30s,2m,10m,-1h", nil},
		{"SHORTLINK_WEBHOOK_RETRY_SCHEDULE", "5,30,120,600,3600", nil},
		{"SHORTLINK_WEBHOOK_ALLOW_PRIVATE", "maybe", nil},
		{"SHORTLINK_WEBHOOK_TIMEOUT", "0s", nil},
		{"SHORTLINK_WEBHOOK_TIMEOUT", "10", nil},
		{"SHORTLINK_WEBHOOK_CONCURRENCY", "0", nil},
		{"SHORTLINK_WEBHOOK_ENDPOINT_CONCURRENCY", "two", nil},
		{"SHORTLINK_WEBHOOK_WORKSPACE_CONCURRENCY", "0", nil},
		{"SHORTLINK_WEBHOOK_WORKSPACE_CONCURRENCY", "many", nil},
		{"SHORTLINK_WEBHOOK_BREAKER", "5,30s", nil},
		{"SHORTLINK_WEBHOOK_BREAKER", "0,30s,10m", nil},
		{"SHORTLINK_WEBHOOK_BREAKER", "5,10m,30s", nil},
		{"SHORTLINK_EDGE_CACHE_LINKS", "0", nil},
		{"SHORTLINK_CLICKS_LOST_AFTER", "500ms", nil},
		{"SHORTLINK_CLICKS_LOST_AFTER", "ten", nil},
		{"SHORTLINK_EDGE_CACHE_LINKS", "-5", nil},
		{"SHORTLINK_EDGE_CACHE_LINKS", "1e6", nil},
		{"SHORTLINK_EDGE_CACHE_LINKS", "67108865", nil},
		{"SHORTLINK_EDGE_CACHE_BYTES", "65535", nil},
		{"SHORTLINK_EDGE_CACHE_BYTES", "64MiB", nil},
		{"SHORTLINK_EDGE_CACHE_BYTES", "1099511627777", nil},
		{"SHORTLINK_EDGE_CACHE_BYTES", "1073741824", map[string]string{"SHORTLINK_EDGE_CACHE_LINKS": "1000"}},
		{"SHORTLINK_WEBHOOK_CA_FILE", "/nonexistent/ca.pem", nil},
		{"SHORTLINK_BILLING_PROCESSOR", "paypal", nil},
		{"SHORTLINK_STRIPE_API_BASE", "ftp://localhost:12111", nil},
		{"SHORTLINK_STRIPE_API_BASE", "localhost:12111", nil},
		{"SHORTLINK_STRIPE_SECRET_KEY", "", map[string]string{"SHORTLINK_BILLING_PROCESSOR": "stripe"}},
		{"SHORTLINK_STRIPE_PRICES", "price_pro_monthly", nil},
		{"SHORTLINK_STRIPE_PRICES", "price_pro_monthly=", nil},
		{"SHORTLINK_STRIPE_PRICES", "price_gold_monthly=price_1", nil},
		{"SHORTLINK_STRIPE_PRICES", "price_pro_monthly=price_1,price_pro_monthly=price_2", nil},
		{"SHORTLINK_STRIPE_PRICES", "price_pro_monthly=price 1", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			kv := map[string]string{tc.name: tc.value}
			for k, v := range tc.extra {
				kv[k] = v
			}
			c, err := Load(env(kv))
			if err == nil {
				t.Fatalf("accepted; config %+v", c)
			}
			if c != nil {
				t.Errorf("returned a config with the error")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.name) {
				t.Errorf("error %q does not name %s", msg, tc.name)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error %q is more than one line", msg)
			}
		})
	}
}

// TestEdgeMemCacheBytes: SHORTLINK_EDGE_CACHE_BYTES bounds the edge's
// link cache in bytes; the older SHORTLINK_EDGE_CACHE_LINKS still works, as
// that many links of the usual size.
func TestEdgeMemCacheBytes(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want int64
	}{
		{map[string]string{}, DefaultEdgeCacheBytes},
		{map[string]string{"SHORTLINK_EDGE_CACHE_BYTES": "3221225472"}, 3 << 30},
		{map[string]string{"SHORTLINK_EDGE_CACHE_LINKS": "1000"}, 1000 * EdgeCacheBytesPerLink},
		{map[string]string{"SHORTLINK_EDGE_CACHE_LINKS": "1"}, minEdgeCacheBytes},
	} {
		c, err := Load(env(tc.env))
		if err != nil {
			t.Fatal(err)
		}
		if c.EdgeCacheBytes != tc.want {
			t.Errorf("%v: EdgeCacheBytes %d, want %d", tc.env, c.EdgeCacheBytes, tc.want)
		}
	}
}

func TestLoadAccepts(t *testing.T) {
	dir := t.TempDir()
	geo := filepath.Join(dir, "GeoLite2-City.mmdb")
	ca := filepath.Join(dir, "ca.pem")
	for _, f := range []string{geo, ca} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	key := "sl_" + strings.Repeat("aZ9", 11) // 33 base62 characters
	c, err := Load(env(map[string]string{
		"SHORTLINK_API_ADDR":                      " :8080 ", // surrounding space is trimmed
		"SHORTLINK_EDGE_ADDR":                     "[::1]:0",
		"SHORTLINK_ANALYTICS_ADDR":                "127.0.0.1:0",
		"SHORTLINK_DATA_DIR":                      dir,
		"SHORTLINK_DEFAULT_DOMAIN":                "Sho.RT",
		"SHORTLINK_SHORT_URL_SCHEME":              "https",
		"SHORTLINK_BOOTSTRAP_API_KEY":             key,
		"SHORTLINK_BOOTSTRAP_PLAN":                "pro",
		"SHORTLINK_DATABASE_URL":                  "postgres://u:p@localhost:5432/db?sslmode=disable",
		"SHORTLINK_KAFKA_BROKERS":                 "k1:9092, k2:9092,",
		"SHORTLINK_CLICKHOUSE_URL":                "clickhouse://localhost:9000/default",
		"SHORTLINK_CLICKHOUSE_CLUSTER":            "shortlink",
		"SHORTLINK_REDIS_URL":                     "rediss://localhost:6380/0",
		"SHORTLINK_GEOIP_DB":                      geo,
		"SHORTLINK_TRUSTED_PROXIES":               "10.0.0.0/8, 192.168.1.7, ::1, 172.16.5.4/12",
		"SHORTLINK_PLAN_LINK_LIMITS":              "free=10,pro=20,business=30,scale=40,enterprise=-1",
		"SHORTLINK_PLAN_RATE_LIMITS":              "free=1, pro=2,business=3,scale=4,enterprise=5",
		"SHORTLINK_AUDIT_RETENTION":               "free=7,pro=90,business=365,scale=-1,enterprise=3650",
		"SHORTLINK_DNS_RESOLVER":                  "127.0.0.1:5353",
		"SHORTLINK_WEBHOOK_RETRY_SCHEDULE":        "1s,2s,3s,4s,0s",
		"SHORTLINK_WEBHOOK_ALLOW_PRIVATE":         "true",
		"SHORTLINK_WEBHOOK_CA_FILE":               ca,
		"SHORTLINK_BILLING_PROCESSOR":             "stripe",
		"SHORTLINK_STRIPE_SECRET_KEY":             "sk_test_x",
		"SHORTLINK_STRIPE_API_BASE":               "http://localhost:12111",
		"SHORTLINK_STRIPE_WEBHOOK_SECRET":         "whsec_x",
		"SHORTLINK_STRIPE_PRICES":                 "price_pro_monthly=price_1Pro, price_scale_annual = price_1Scale",
		"SHORTLINK_EDGE_CACHE_LINKS":              "1048576",
		"SHORTLINK_CLICKS_LOST_AFTER":             "3s",
		"SHORTLINK_CLICK_SPOOL_MAX_BYTES":         "5242880",
		"SHORTLINK_CLICK_FLUSH_INTERVAL":          "50ms",
		"SHORTLINK_WEBHOOK_LEASE":                 "3s",
		"SHORTLINK_IMPORT_MAX_BYTES":              "4096",
		"SHORTLINK_IMPORT_PAUSE":                  "0s",
		"SHORTLINK_IMPORT_LEASE":                  "2s",
		"SHORTLINK_WEBHOOK_TIMEOUT":               "250ms",
		"SHORTLINK_WEBHOOK_CONCURRENCY":           "64",
		"SHORTLINK_WEBHOOK_ENDPOINT_CONCURRENCY":  "3",
		"SHORTLINK_WEBHOOK_WORKSPACE_CONCURRENCY": "12",
		"SHORTLINK_WEBHOOK_BREAKER":               "2,1s,4s",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		APIAddr:           ":8080",
		EdgeAddr:          "[::1]:0",
		AnalyticsAddr:     "127.0.0.1:0",
		DataDir:           dir,
		DefaultDomain:     "sho.rt",
		ShortURLScheme:    "https",
		BootstrapAPIKey:   key,
		BootstrapPlan:     workspace.Pro,
		DatabaseURL:       "postgres://u:p@localhost:5432/db?sslmode=disable",
		KafkaBrokers:      []string{"k1:9092", "k2:9092"},
		ClickHouseURL:     "clickhouse://localhost:9000/default",
		ClickHouseCluster: "shortlink",
		RedisURL:          "rediss://localhost:6380/0",
		GeoIPDB:           geo,
		TrustedProxies: []netip.Prefix{
			netip.MustParsePrefix("10.0.0.0/8"),
			netip.MustParsePrefix("192.168.1.7/32"),
			netip.MustParsePrefix("::1/128"),
			netip.MustParsePrefix("172.16.0.0/12"), // masked
		},
		PlanLinkLimits: map[workspace.Plan]int{
			workspace.Free: 10, workspace.Pro: 20, workspace.Business: 30, workspace.Scale: 40, workspace.Enterprise: -1,
		},
		PlanRateLimits: map[workspace.Plan]int{
			workspace.Free: 1, workspace.Pro: 2, workspace.Business: 3, workspace.Scale: 4, workspace.Enterprise: 5,
		},
		AuditRetention: map[workspace.Plan]int{
			workspace.Free: 7, workspace.Pro: 90, workspace.Business: 365, workspace.Scale: -1, workspace.Enterprise: 3650,
		},
		DNSResolver:         "127.0.0.1:5353",
		WebhookRetries:      []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second, 0},
		WebhookAllowPriv:    true,
		WebhookCAFile:       ca,
		BillingProcessor:    "stripe",
		StripeSecretKey:     "sk_test_x",
		StripeAPIBase:       "http://localhost:12111",
		StripeWebhookSecret: "whsec_x",
		StripePrices:        map[string]string{"price_pro_monthly": "price_1Pro", "price_scale_annual": "price_1Scale"},
		EdgeCacheLinks:      1 << 20,
		EdgeCacheBytes:      1 << 20 * EdgeCacheBytesPerLink,
		ClicksLostAfter:     3 * time.Second,
		ClickSpoolMaxBytes:  5 << 20,
		ClickFlushInterval:  50 * time.Millisecond,
		WebhookLease:        3 * time.Second,
		ImportMaxBytes:      4096, ImportPause: 0, ImportLease: 2 * time.Second,
		WebhookTimeout:              250 * time.Millisecond,
		WebhookConcurrency:          64,
		WebhookEndpointConcurrency:  3,
		WebhookWorkspaceConcurrency: 12,
		WebhookBreaker:              webhook.Breaker{Threshold: 2, Cooldown: time.Second, MaxCooldown: 4 * time.Second},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("\n got %+v\nwant %+v", c, want)
	}
	if got := c.ShortURL(c.DefaultDomain, "Ab-1"); got != "https://sho.rt/Ab-1" {
		t.Errorf("ShortURL = %q", got)
	}
}

func TestTrustedProxyBareIP(t *testing.T) {
	c, err := Load(env(map[string]string{"SHORTLINK_TRUSTED_PROXIES": "203.0.113.9"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.TrustedProxies) != 1 {
		t.Fatalf("TrustedProxies = %v", c.TrustedProxies)
	}
	p := c.TrustedProxies[0]
	if p.Bits() != 32 || !p.Contains(netip.MustParseAddr("203.0.113.9")) || p.Contains(netip.MustParseAddr("203.0.113.10")) {
		t.Errorf("bare IP became %v, want 203.0.113.9/32", p)
	}
}

func TestLinkLimits(t *testing.T) {
	tests := []struct {
		value string
		want  map[workspace.Plan]int
	}{
		// Enterprise is unlimited unless given.
		{"free=1,pro=2,business=3,scale=4", map[workspace.Plan]int{
			workspace.Free: 1, workspace.Pro: 2, workspace.Business: 3, workspace.Scale: 4, workspace.Enterprise: -1}},
		{"free=-1,pro=-1,business=-1,scale=-1,enterprise=-1", map[workspace.Plan]int{
			workspace.Free: -1, workspace.Pro: -1, workspace.Business: -1, workspace.Scale: -1, workspace.Enterprise: -1}},
		{"enterprise=7,free=0,pro=2,business=3,scale=4", map[workspace.Plan]int{
			workspace.Free: 0, workspace.Pro: 2, workspace.Business: 3, workspace.Scale: 4, workspace.Enterprise: 7}},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			c, err := Load(env(map[string]string{"SHORTLINK_PLAN_LINK_LIMITS": tc.value}))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.PlanLinkLimits, tc.want) {
				t.Errorf("PlanLinkLimits = %v, want %v", c.PlanLinkLimits, tc.want)
			}
			for p, n := range tc.want {
				if c.LinkLimit(p) != n {
					t.Errorf("LinkLimit(%s) = %d, want %d", p, c.LinkLimit(p), n)
				}
			}
		})
	}
}

func TestLimitFallbackToFree(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.LinkLimit("unknown"); got != 1000 {
		t.Errorf("LinkLimit(unknown) = %d, want the free limit", got)
	}
	if got := c.RateLimit("unknown"); got != 60 {
		t.Errorf("RateLimit(unknown) = %d, want the free rate", got)
	}
}

func TestDefaultDomainForms(t *testing.T) {
	for _, v := range []string{"localhost:8081", "sho.rt", "SHO.RT:443", "127.0.0.1:8081", "[::1]:8081", "a-b.example.co.uk"} {
		t.Run(v, func(t *testing.T) {
			c, err := Load(env(map[string]string{"SHORTLINK_DEFAULT_DOMAIN": v}))
			if err != nil {
				t.Fatal(err)
			}
			if c.DefaultDomain != strings.ToLower(v) {
				t.Errorf("DefaultDomain = %q", c.DefaultDomain)
			}
		})
	}
}

func TestEmptyValueMeansDefault(t *testing.T) {
	c, err := Load(env(map[string]string{"SHORTLINK_DATA_DIR": "  ", "SHORTLINK_BOOTSTRAP_PLAN": ""}))
	if err != nil {
		t.Fatal(err)
	}
	if c.DataDir != "./data" || c.BootstrapPlan != workspace.Enterprise {
		t.Errorf("DataDir = %q, BootstrapPlan = %q", c.DataDir, c.BootstrapPlan)
	}
}

func TestLoadHidesSecretValues(t *testing.T) {
	for name, value := range map[string]string{
		"SHORTLINK_DATABASE_URL":      "mysql://admin:hunter2@db/x",
		"SHORTLINK_BOOTSTRAP_API_KEY": "hunter2",
		"SHORTLINK_REDIS_URL":         "memcached://u:hunter2@x",
	} {
		_, err := Load(env(map[string]string{name: value}))
		if err == nil || !strings.Contains(err.Error(), name) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error %v must name the setting and hide its value", name, err)
		}
	}
}

// TestMemberSecPublicURL: SHORTLINK_PUBLIC_URL is an origin; without it the
// dashboard's address is SHORTLINK_API_ADDR's when that is a fixed one.
func TestMemberSecPublicURL(t *testing.T) {
	for v, want := range map[string]string{"https://links.example.com/": "https://links.example.com", "http://10.0.0.5:8080": "http://10.0.0.5:8080"} {
		c, err := Load(env(map[string]string{"SHORTLINK_PUBLIC_URL": v}))
		if err != nil || c.PublicURL != want || c.DashboardURL() != want {
			t.Errorf("%q: %+v %v", v, c, err)
		}
	}
	for _, v := range []string{"links.example.com", "ftp://x", "https://x/path", "https://u:p@x", "https://x/?a=1"} {
		if _, err := Load(env(map[string]string{"SHORTLINK_PUBLIC_URL": v})); err == nil || !strings.Contains(err.Error(), "SHORTLINK_PUBLIC_URL") {
			t.Errorf("%q accepted: %v", v, err)
		}
	}
	for addr, want := range map[string]string{"127.0.0.1:8080": "http://127.0.0.1:8080", "0.0.0.0:8080": "", "[::]:80": "", "127.0.0.1:0": "", ":8080": ""} {
		c, err := Load(env(map[string]string{"SHORTLINK_API_ADDR": addr}))
		if err != nil || c.DashboardURL() != want {
			t.Errorf("SHORTLINK_API_ADDR %q: dashboard %q, want %q (%v)", addr, c.DashboardURL(), want, err)
		}
	}
}

// TestMemberSecOIDCDefaultRole: automatic membership makes viewers or
// members only.
func TestMemberSecOIDCDefaultRole(t *testing.T) {
	base := map[string]string{"SHORTLINK_OIDC_ISSUER": "https://idp.example", "SHORTLINK_OIDC_CLIENT_ID": "c",
		"SHORTLINK_OIDC_CLIENT_SECRET": "s", "SHORTLINK_OIDC_REDIRECT_URL": "https://links.example.com/signin/oidc/callback"}
	for role, ok := range map[string]bool{"viewer": true, "member": true, "admin": false, "owner": false} {
		kv := map[string]string{"SHORTLINK_OIDC_DEFAULT_ROLE": role}
		for k, v := range base {
			kv[k] = v
		}
		_, err := Load(env(kv))
		if (err == nil) != ok {
			t.Errorf("SHORTLINK_OIDC_DEFAULT_ROLE=%s: %v", role, err)
		}
	}
}
