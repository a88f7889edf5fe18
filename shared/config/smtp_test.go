package config

import (
	"strings"
	"testing"
	"time"
)

func TestInvMailSMTPURL(t *testing.T) {
	s, err := ParseSMTPURL("smtp://ada%40x:p%3Ass@mail.example.com?from=Links%20%3Clinks@example.com%3E")
	if err != nil {
		t.Fatal(err)
	}
	if s.Implicit || s.Host != "mail.example.com" || s.Port != 587 || s.Username != "ada@x" || s.Password != "p:ss" ||
		s.From.Address != "links@example.com" || s.From.Name != "Links" || s.TLS != "opportunistic" || s.Timeout != 10*time.Second {
		t.Errorf("smtp:// read as %+v", s)
	}
	s, err = ParseSMTPURL("smtps://mail.example.com?from=links@example.com&timeout=3s")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Implicit || s.Port != 465 || s.TLS != "required" || s.Timeout != 3*time.Second || s.Addr() != "mail.example.com:465" {
		t.Errorf("smtps:// read as %+v", s)
	}
	if s, err := ParseSMTPURL(""); s != nil || err != nil {
		t.Errorf("empty: %v %v", s, err)
	}
	for _, bad := range []string{
		"http://mail.example.com?from=a@example.com",
		"smtp://mail.example.com",
		"smtp://mail.example.com?from=not-an-address",
		"smtp://mail.example.com?from=a@example.com%0D%0ABcc:%20b@example.com",
		"smtp://mail.example.com?from=a@example.com&timeout=5m",
		"smtp://mail.example.com?from=a@example.com&tls=maybe",
		"smtps://mail.example.com?from=a@example.com&tls=none",
		"smtp://mail.example.com:99999?from=a@example.com",
		"smtp://mail.example.com?from=a@example.com&frm=x",
		"smtp://?from=a@example.com",
	} {
		if _, err := ParseSMTPURL(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	// The setting is secret: a bad value (it may hold a password) is not repeated.
	_, err = Load(func(k string) string {
		if k == "SHORTLINK_SMTP_URL" {
			return "smtp://u:hunter2secret@mail.example.com"
		}
		return ""
	})
	if err == nil || strings.Contains(err.Error(), "hunter2secret") {
		t.Errorf("Load: %v", err)
	}
}
