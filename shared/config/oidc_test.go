package config

import (
	"reflect"
	"strings"
	"testing"

	"shortlink.dev/shared/workspace"
)

func TestOIDCConfig(t *testing.T) {
	env := func(kv map[string]string) func(string) string {
		return func(k string) string { return kv[k] }
	}
	base := map[string]string{
		"SHORTLINK_OIDC_ISSUER":        "https://idp.example.com/realms/acme",
		"SHORTLINK_OIDC_CLIENT_ID":     "shortlink",
		"SHORTLINK_OIDC_CLIENT_SECRET": "s3cret",
	}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}

	t.Run("OK", func(t *testing.T) {
		c, err := Load(env(with(map[string]string{
			"SHORTLINK_API_ADDR":             "127.0.0.1:9000",
			"SHORTLINK_OIDC_ALLOWED_DOMAINS": "Example.com, bücher.example,",
			"SHORTLINK_OIDC_DEFAULT_ROLE":    "viewer",
			"SHORTLINK_OIDC_WORKSPACE":       "Marketing",
		})))
		if err != nil {
			t.Fatal(err)
		}
		want := OIDC{Issuer: "https://idp.example.com/realms/acme", ClientID: "shortlink", ClientSecret: "s3cret",
			RedirectURL:    "http://127.0.0.1:9000/signin/oidc/callback",
			AllowedDomains: []string{"example.com", "xn--bcher-kva.example"}, DefaultRole: workspace.Viewer, Workspace: "Marketing"}
		if !reflect.DeepEqual(c.OIDC, want) || !c.OIDC.Enabled() {
			t.Errorf("OIDC = %+v\nwant %+v", c.OIDC, want)
		}
	})

	t.Run("Defaults", func(t *testing.T) {
		c, err := Load(env(with(map[string]string{"SHORTLINK_OIDC_REDIRECT_URL": "https://links.example.com/signin/oidc/callback"})))
		if err != nil {
			t.Fatal(err)
		}
		if c.OIDC.Workspace != "default" || c.OIDC.DefaultRole != "" || c.OIDC.AllowedDomains != nil ||
			c.OIDC.RedirectURL != "https://links.example.com/signin/oidc/callback" {
			t.Errorf("OIDC = %+v", c.OIDC)
		}
		off, err := Load(env(nil))
		if err != nil || off.OIDC.Enabled() {
			t.Errorf("without an issuer: %+v, %v", off.OIDC, err)
		}
	})

	for _, tc := range []struct{ name, value, want string }{
		{"SHORTLINK_OIDC_ISSUER", "accounts.google.com", "issuer URL"},
		{"SHORTLINK_OIDC_ISSUER", "ftp://idp.example.com", "issuer URL"},
		{"SHORTLINK_OIDC_CLIENT_ID", " ", "SHORTLINK_OIDC_CLIENT_ID: required"},
		{"SHORTLINK_OIDC_CLIENT_SECRET", "", "SHORTLINK_OIDC_CLIENT_SECRET: required"},
		{"SHORTLINK_OIDC_REDIRECT_URL", "https://links.example.com/callback", "/signin/oidc/callback"},
		{"SHORTLINK_OIDC_REDIRECT_URL", "/signin/oidc/callback", "/signin/oidc/callback"},
		{"SHORTLINK_OIDC_ALLOWED_DOMAINS", "example.com,@evil", "not a domain name"},
		{"SHORTLINK_OIDC_DEFAULT_ROLE", "superuser", "owner, admin, member, viewer"},
		{"SHORTLINK_API_ADDR", "0.0.0.0:8080", "SHORTLINK_OIDC_REDIRECT_URL: required"},
		{"SHORTLINK_API_ADDR", "127.0.0.1:0", "SHORTLINK_OIDC_REDIRECT_URL: required"},
	} {
		t.Run("Err"+tc.name, func(t *testing.T) {
			_, err := Load(env(with(map[string]string{tc.name: tc.value})))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s=%q: %v, want an error with %q", tc.name, tc.value, err, tc.want)
			}
		})
	}

}
