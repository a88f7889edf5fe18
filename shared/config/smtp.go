package config

import (
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// SMTP is where invites are sent by email (SHORTLINK_SMTP_URL):
//
//	smtp://user:password@host:587?from=links@example.com
//	smtps://user:password@host:465?from=Links%20<links@example.com>&timeout=10s
//
// smtp:// speaks STARTTLS whenever the server offers it (tls=required
// refuses a server that does not, tls=none never starts it: for a relay on
// the same host); smtps:// is TLS from the first byte (implicit TLS, port
// 465 by default). The user and password, both percent-encoded, are sent
// with AUTH PLAIN (what submission servers offer), only over TLS unless
// the server is this host (localhost, 127.0.0.1, ::1). from is required: the From address,
// optionally with a display name. timeout bounds one whole delivery
// (connect, TLS, AUTH, the message): 10s by default, at most 60s.
type SMTP struct {
	// Implicit is true for smtps:// (TLS from the start).
	Implicit bool
	Host     string
	Port     int
	Username string
	Password string
	// From is the From header's address, with its display name if any.
	From *mail.Address
	// TLS is "opportunistic" (smtp://'s default), "required" or "none";
	// smtps:// is always TLS.
	TLS     string
	Timeout time.Duration
}

// MaxSMTPTimeout bounds SHORTLINK_SMTP_URL's timeout.
const MaxSMTPTimeout = time.Minute

// ParseSMTPURL reads SHORTLINK_SMTP_URL's value; "" is no SMTP (nil).
func ParseSMTPURL(v string) (*SMTP, error) {
	if v == "" {
		return nil, nil
	}
	u, err := url.Parse(v)
	if err != nil {
		return nil, fmt.Errorf("must be a URL like smtp://user:password@host:587?from=links@example.com")
	}
	s := &SMTP{TLS: "opportunistic", Timeout: 10 * time.Second}
	switch u.Scheme {
	case "smtp":
		s.Port = 587
	case "smtps":
		s.Implicit, s.Port, s.TLS = true, 465, "required"
	default:
		return nil, fmt.Errorf("must start with smtp:// (STARTTLS when offered) or smtps:// (implicit TLS)")
	}
	s.Host = u.Hostname()
	if s.Host == "" || strings.ContainsAny(s.Host, " \t\r\n") {
		return nil, fmt.Errorf("names no host")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("has a bad port %q", p)
		}
		s.Port = n
	}
	if u.User != nil {
		s.Username = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	q := u.Query()
	for k := range q {
		if k != "from" && k != "timeout" && k != "tls" {
			return nil, fmt.Errorf("has an unknown parameter %q (want from, timeout, tls)", k)
		}
	}
	from := q.Get("from")
	if from == "" {
		return nil, fmt.Errorf("needs the From address: ?from=links@example.com")
	}
	if s.From, err = mail.ParseAddress(from); err != nil || strings.ContainsAny(from, "\r\n") {
		return nil, fmt.Errorf("has a bad from address %q", from)
	}
	if t := q.Get("timeout"); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d < 100*time.Millisecond || d > MaxSMTPTimeout {
			return nil, fmt.Errorf("timeout must be a duration from 100ms to 1m, like 10s")
		}
		s.Timeout = d
	}
	switch t := q.Get("tls"); {
	case t == "":
	case s.Implicit && t != "required":
		return nil, fmt.Errorf("smtps:// is always TLS: tls=%s does not apply", t)
	case t == "opportunistic" || t == "required" || t == "none":
		s.TLS = t
	default:
		return nil, fmt.Errorf("tls must be opportunistic, required or none")
	}
	return s, nil
}

// Addr is the server's host:port.
func (s *SMTP) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }
