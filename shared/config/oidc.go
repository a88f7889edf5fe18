package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"golang.org/x/net/idna"

	"shortlink.dev/shared/workspace"
)

// OIDC is the dashboard's single sign-on with an OpenID provider
// (SHORTLINK_OIDC_*); off while Issuer is empty.
type OIDC struct {
	// Issuer is the provider's issuer URL, as its discovery document
	// (Issuer + "/.well-known/openid-configuration") names it.
	Issuer       string
	ClientID     string
	ClientSecret string
	// RedirectURL is the dashboard's callback, registered at the provider:
	// SHORTLINK_OIDC_REDIRECT_URL, by default
	// http://SHORTLINK_API_ADDR/signin/oidc/callback.
	RedirectURL string
	// AllowedDomains are the email domains (lower case, IDNA ASCII form)
	// whose people may sign in with SSO; empty allows any.
	AllowedDomains []string
	// DefaultRole is the role of automatic membership: a person the
	// dashboard does not know joins Workspace with it. Empty: no automatic
	// membership (people join by invite, then sign in with SSO).
	DefaultRole workspace.Role
	// Workspace is the id or the name of the workspace automatic members
	// join ("default", the bootstrap's workspace, unless set).
	Workspace string
}

// Enabled reports whether single sign-on is configured.
func (o OIDC) Enabled() bool { return o.Issuer != "" }

// OIDCCallbackPath is the dashboard's path the provider sends people back to.
const OIDCCallbackPath = "/signin/oidc/callback"

func init() {
	options = append(options,
		option{"SHORTLINK_OIDC_ISSUER", "", func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
				return fmt.Errorf("must be the provider's issuer URL, like https://accounts.google.com")
			}
			c.OIDC.Issuer = v
			return nil
		}},
		option{"SHORTLINK_OIDC_CLIENT_ID", "", func(c *Config, v string) error { c.OIDC.ClientID = v; return nil }},
		option{"SHORTLINK_OIDC_CLIENT_SECRET", "", func(c *Config, v string) error { c.OIDC.ClientSecret = v; return nil }},
		option{"SHORTLINK_OIDC_REDIRECT_URL", "", func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != OIDCCallbackPath || u.RawQuery != "" || u.Fragment != "" {
				return fmt.Errorf("must be the dashboard's address followed by %s, like https://links.example.com%s", OIDCCallbackPath, OIDCCallbackPath)
			}
			c.OIDC.RedirectURL = v
			return nil
		}},
		option{"SHORTLINK_OIDC_ALLOWED_DOMAINS", "", func(c *Config, v string) error {
			for _, d := range splitList(v) {
				a, err := EmailDomain(d)
				if err != nil || !strings.Contains(a, ".") {
					return fmt.Errorf("%q is not a domain name: list email domains, like example.com,example.org", d)
				}
				c.OIDC.AllowedDomains = append(c.OIDC.AllowedDomains, a)
			}
			return nil
		}},
		option{"SHORTLINK_OIDC_DEFAULT_ROLE", "", func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			r, err := workspace.ParseRole(v)
			if err != nil {
				return fmt.Errorf("%w, or empty for no automatic membership", err)
			}
			// Whoever the provider signs in gets this role: an issuer
			// open to the public (Google) would hand out the workspace.
			if r != workspace.Viewer && r != workspace.Member {
				return fmt.Errorf("must be viewer or member (or empty): automatic membership never makes admins or owners; promote people on the Members page")
			}
			c.OIDC.DefaultRole = r
			return nil
		}},
		option{"SHORTLINK_OIDC_WORKSPACE", "default", func(c *Config, v string) error { c.OIDC.Workspace = v; return nil }},
	)
	secret["SHORTLINK_OIDC_CLIENT_SECRET"] = true
}

// checkOIDC checks the SSO settings together, once each was read.
func (c *Config) checkOIDC() error {
	o := &c.OIDC
	if !o.Enabled() {
		*o = OIDC{} // the other SSO settings mean nothing without an issuer
		return nil
	}
	if o.ClientID == "" {
		return fmt.Errorf("invalid setting SHORTLINK_OIDC_CLIENT_ID: required when SHORTLINK_OIDC_ISSUER is set")
	}
	if o.ClientSecret == "" {
		return fmt.Errorf("invalid setting SHORTLINK_OIDC_CLIENT_SECRET: required when SHORTLINK_OIDC_ISSUER is set")
	}
	if o.RedirectURL == "" {
		host, port, _ := net.SplitHostPort(c.APIAddr)
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) || port == "0" {
			return fmt.Errorf("invalid setting SHORTLINK_OIDC_REDIRECT_URL: required when SHORTLINK_API_ADDR (%s) names no fixed address the browser can reach: set the dashboard's public address followed by %s", c.APIAddr, OIDCCallbackPath)
		}
		o.RedirectURL = "http://" + net.JoinHostPort(host, port) + OIDCCallbackPath
	}
	return nil
}

// EmailDomain returns the domain d (an email's part after the "@") as the
// SSO settings compare it: lower case, in IDNA's ASCII form, so that
// "Bücher.example" and "xn--bcher-kva.example" are one domain.
func EmailDomain(d string) (string, error) {
	a, err := idna.Lookup.ToASCII(strings.ToLower(strings.TrimSpace(d)))
	if err != nil || a == "" {
		return "", fmt.Errorf("not a domain name: %q", d)
	}
	return a, nil
}
