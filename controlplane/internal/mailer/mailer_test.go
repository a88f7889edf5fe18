package mailer_test

import (
	"context"
	"crypto/tls"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"shortlink.dev/controlplane/internal/mailer"
	"shortlink.dev/controlplane/smtptest"
	"shortlink.dev/shared/config"
)

func smtpConfig(t *testing.T, raw string) *config.SMTP {
	t.Helper()
	c, err := config.ParseSMTPURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var invitation = mailer.Invitation{
	To:        "ada@example.com",
	Workspace: "Acme\r\nBcc: evil@example.net",
	Inviter:   "Grace\nX-Injected: yes",
	Role:      "admin",
	AcceptURL: "https://links.example.com/join/inv_abc",
	ExpiresAt: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC),
}

// The message goes through STARTTLS and AUTH to its one recipient; names
// with CR/LF add no header and no recipient.
func TestInvMailSendsOverSTARTTLS(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{Username: "u@x", Password: "s3cret", TLS: true})
	m := mailer.New(smtpConfig(t, "smtp://u%40x:s3cret@"+srv.Addr+"?from=Links%20%3Clinks@example.com%3E&tls=required"))
	m.TLSConfig = &tls.Config{RootCAs: srv.RootCAs, ServerName: "127.0.0.1"}
	if err := m.SendInvitation(context.Background(), invitation); err != nil {
		t.Fatal(err)
	}
	got := srv.Wait(t, 1, 5*time.Second)
	if !got.TLS || got.Authed != "u@x" {
		t.Errorf("TLS %v, authed %q: want STARTTLS and AUTH", got.TLS, got.Authed)
	}
	if got.From != "links@example.com" || len(got.To) != 1 || got.To[0] != "ada@example.com" {
		t.Errorf("envelope from %q to %q", got.From, got.To)
	}
	msg, err := got.Parsed()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"Bcc", "X-Injected"} {
		if v := msg.Header.Get(h); v != "" {
			t.Errorf("injected header %s: %q", h, v)
		}
	}
	if strings.Contains(string(got.Data), "\r\nBcc:") || strings.Contains(string(got.Data), "\nX-Injected:") {
		t.Errorf("a name's CR/LF reached the headers:\n%s", got.Data)
	}
	subj, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if err != nil || subj != "Grace X-Injected: yes invited you to Acme Bcc: evil@example.net" {
		t.Errorf("subject %q (%v)", subj, err)
	}
	if msg.Header.Get("To") != "<ada@example.com>" || !strings.Contains(msg.Header.Get("From"), "links@example.com") {
		t.Errorf("To %q From %q", msg.Header.Get("To"), msg.Header.Get("From"))
	}
	text := bodyPart(t, msg.Header.Get("Content-Type"), msg.Body, "text/plain")
	for _, want := range []string{"Acme Bcc: evil@example.net", "as admin", invitation.AcceptURL, "Thursday 3 December 2026 at 10:00 UTC"} {
		if !strings.Contains(text, want) {
			t.Errorf("text body lacks %q:\n%s", want, text)
		}
	}
}

// bodyPart returns the decoded part of the wanted type of a multipart/alternative body.
func bodyPart(t *testing.T, contentType string, body io.Reader, want string) string {
	t.Helper()
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || !strings.HasPrefix(mt, "multipart/") {
		t.Fatalf("content type %q (%v)", contentType, err)
	}
	mr := multipart.NewReader(body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err != nil {
			t.Fatalf("no %s part: %v", want, err)
		}
		if strings.HasPrefix(p.Header.Get("Content-Type"), want) {
			b, err := io.ReadAll(p) // quoted-printable is decoded by NextPart
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
}

// A server slower than the timeout costs the timeout, not more, and says so.
func TestInvMailSlowServerIsBounded(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{Delay: 5 * time.Second})
	m := mailer.New(smtpConfig(t, "smtp://"+srv.Addr+"?from=links@example.com&timeout=300ms&tls=none"))
	start := time.Now()
	err := m.SendInvitation(context.Background(), invitation)
	if err == nil || !strings.Contains(err.Error(), "did not answer within 300ms") {
		t.Errorf("err = %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s with a 300ms timeout", d)
	}
	// A server that accepts the connection and never greets.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	m = mailer.New(smtpConfig(t, "smtp://"+l.Addr().String()+"?from=links@example.com&timeout=300ms"))
	start = time.Now()
	if err := m.SendInvitation(context.Background(), invitation); err == nil {
		t.Error("a silent server: no error")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("silent server: took %s with a 300ms timeout", d)
	}
}

// A refused recipient, a wrong password and a closed port are errors that
// never repeat the password.
func TestInvMailFailuresReported(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{Reject: true})
	m := mailer.New(smtpConfig(t, "smtp://"+srv.Addr+"?from=links@example.com&tls=none"))
	if err := m.SendInvitation(context.Background(), invitation); err == nil || !strings.Contains(err.Error(), "550") {
		t.Errorf("rejected recipient: %v", err)
	}
	auth := smtptest.Start(t, smtptest.Options{Username: "u", Password: "right-password"})
	m = mailer.New(smtpConfig(t, "smtp://u:"+url.QueryEscape("wrong-password")+"@"+auth.Addr+"?from=links@example.com&tls=none"))
	err := m.SendInvitation(context.Background(), invitation)
	if err == nil || strings.Contains(err.Error(), "wrong-password") {
		t.Errorf("wrong password: %v", err)
	}
	if n := len(auth.Messages()); n != 0 {
		t.Errorf("%d messages without AUTH", n)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	m = mailer.New(smtpConfig(t, "smtp://"+addr+"?from=links@example.com&timeout=1s"))
	if err := m.SendInvitation(context.Background(), invitation); err == nil {
		t.Error("closed port: no error")
	}
}

func TestInvMailClean(t *testing.T) {
	for in, want := range map[string]string{
		"Acme\r\nBcc: x@y":   "Acme Bcc: x@y",
		"  a\tb\u2028c\x00 ": "a b c",
		"\u0085\r\n":         "",
	} {
		if got := mailer.Clean(in, 100); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
	if got := mailer.Clean(strings.Repeat("é", 120), 100); len([]rune(got)) != 101 {
		t.Errorf("not cut: %d runes", len([]rune(got)))
	}
}

// smtps:// speaks TLS from the first byte.
func TestInvMailSendsOverImplicitTLS(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{Implicit: true, Username: "u", Password: "p"})
	m := mailer.New(smtpConfig(t, "smtps://u:p@"+srv.Addr+"?from=links@example.com"))
	m.TLSConfig = &tls.Config{RootCAs: srv.RootCAs, ServerName: "127.0.0.1"}
	if err := m.SendInvitation(context.Background(), invitation); err != nil {
		t.Fatal(err)
	}
	if got := srv.Wait(t, 1, 5*time.Second); !got.TLS || got.Authed != "u" || got.To[0] != "ada@example.com" {
		t.Fatalf("received %+v", got)
	}
	// A certificate the client does not trust: nothing is sent.
	m = mailer.New(smtpConfig(t, "smtps://u:p@"+srv.Addr+"?from=links@example.com&timeout=2s"))
	if err := m.SendInvitation(context.Background(), invitation); err == nil {
		t.Fatal("an untrusted certificate was accepted")
	}
	if n := len(srv.Messages()); n != 1 {
		t.Fatalf("%d messages", n)
	}
}
