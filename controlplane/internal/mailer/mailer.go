// Package mailer sends the control plane's email: invites, over SMTP
// (SHORTLINK_SMTP_URL, shared/config.SMTP), with github.com/wneessen/go-mail.
//
// Every text a user chose (a workspace's name, an inviter's name) reaches a
// header only through Clean, which turns every control character (CR and LF
// included) into a space, and go-mail, which encodes non-ASCII words
// (RFC 2047): no user can add a header or a recipient. The one recipient
// is the invite's email, checked by the members service as an address.
package mailer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"html"
	"net"
	"strings"
	"time"
	"unicode"

	"github.com/wneessen/go-mail"

	"shortlink.dev/shared/config"
)

// Invitation is what an invite's email says.
type Invitation struct {
	// To is the invited email.
	To string
	// Workspace is the workspace's name; Inviter who invited (a person's
	// name, or an API key's).
	Workspace, Inviter string
	// Role is the role the person joins with.
	Role string
	// AcceptURL is the one-time link; ExpiresAt when it stops working.
	AcceptURL string
	ExpiresAt time.Time
}

// Mailer sends email through one SMTP server.
type Mailer struct {
	cfg *config.SMTP
	// TLSConfig, when set, replaces the default TLS settings (tests trust
	// their own certificate with it).
	TLSConfig *tls.Config
}

// New returns a mailer for cfg.
func New(cfg *config.SMTP) *Mailer { return &Mailer{cfg: cfg} }

// Clean makes a user's text safe for a header and a one-line sentence: every
// control character (CR, LF, tab, the C1 controls) and every Unicode line or
// paragraph separator becomes a space; it is then trimmed and cut to max
// runes.
func Clean(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == '\u0085' {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}

// Message returns the invitation's subject and its plain-text and HTML bodies.
func Message(inv Invitation) (subject, text, htmlBody string) {
	ws, who := Clean(inv.Workspace, 100), Clean(inv.Inviter, 100)
	if who == "" {
		who = "Someone"
	}
	exp := inv.ExpiresAt.UTC().Format("Monday 2 January 2006 at 15:04 UTC")
	subject = fmt.Sprintf("%s invited you to %s", who, ws)
	text = fmt.Sprintf(`%s invited you to join the workspace %s as %s.

Accept the invite (this link works once, until %s):

%s

If you did not expect this invite, ignore this email: nothing happens
until the link is opened and accepted.
`, who, ws, inv.Role, exp, inv.AcceptURL)
	e := html.EscapeString
	htmlBody = fmt.Sprintf(`<!doctype html><html><body style="font-family:sans-serif">
<p>%s invited you to join the workspace <strong>%s</strong> as <strong>%s</strong>.</p>
<p><a href="%s">Accept the invite</a> (this link works once, until %s).</p>
<p style="color:#555">If you did not expect this invite, ignore this email: nothing happens until the link is opened and accepted.</p>
</body></html>
`, e(who), e(ws), e(inv.Role), e(inv.AcceptURL), e(exp))
	return subject, text, htmlBody
}

// SendInvitation emails the invitation, within the configured timeout (and
// ctx). The error says what failed, never the server's password.
func (m *Mailer) SendInvitation(ctx context.Context, inv Invitation) error {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	msg := mail.NewMsg()
	if err := msg.FromFormat(Clean(m.cfg.From.Name, 100), m.cfg.From.Address); err != nil {
		return fmt.Errorf("from address: %w", err)
	}
	if strings.ContainsAny(inv.To, "\r\n,;<>\" ") {
		return errors.New("the recipient is not a single address")
	}
	if err := msg.To(inv.To); err != nil {
		return fmt.Errorf("recipient: %w", err)
	}
	subject, text, htmlBody := Message(inv)
	msg.Subject(subject)
	msg.SetMessageID()
	msg.SetDate()
	msg.SetBodyString(mail.TypeTextPlain, text)
	msg.AddAlternativeString(mail.TypeTextHTML, htmlBody)

	opts := []mail.Option{mail.WithPort(m.cfg.Port), mail.WithTimeout(m.cfg.Timeout)}
	switch {
	case m.cfg.Implicit:
		opts = append(opts, mail.WithSSL())
	case m.cfg.TLS == "required":
		opts = append(opts, mail.WithTLSPolicy(mail.TLSMandatory))
	case m.cfg.TLS == "none":
		opts = append(opts, mail.WithTLSPolicy(mail.NoTLS))
	default:
		opts = append(opts, mail.WithTLSPolicy(mail.TLSOpportunistic))
	}
	if m.TLSConfig != nil {
		opts = append(opts, mail.WithTLSConfig(m.TLSConfig))
	} else {
		opts = append(opts, mail.WithTLSConfig(&tls.Config{ServerName: m.cfg.Host, MinVersion: tls.VersionTLS12}))
	}
	if m.cfg.Username != "" {
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthPlain),
			mail.WithUsername(m.cfg.Username), mail.WithPassword(m.cfg.Password))
	}
	c, err := mail.NewClient(m.cfg.Host, opts...)
	if err != nil {
		return fmt.Errorf("smtp client: %w", err)
	}
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		var ne net.Error
		if ctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) || strings.Contains(err.Error(), "i/o timeout") {
			return fmt.Errorf("the mail server %s did not answer within %s", m.cfg.Addr(), m.cfg.Timeout)
		}
		// Not wrapped: the library's error may quote what was sent, and
		// the answer shows this one to the inviter.
		return fmt.Errorf("sending through %s: %s", m.cfg.Addr(), redact(err.Error(), m.cfg.Password))
	}
	return nil
}

func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "…")
}
