// Package smtptest runs a real SMTP server in process for tests
// (github.com/emersion/go-smtp's server): it keeps every message it
// receives, and can require AUTH, offer STARTTLS, be slow or refuse.
package smtptest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"net/mail"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Message is one message the server accepted.
type Message struct {
	From string
	To   []string
	// Data is the message as sent (headers and body).
	Data []byte
	// Authed is the user that authenticated, if any; TLS whether the
	// session was encrypted.
	Authed string
	TLS    bool
}

// Parsed returns the message parsed as RFC 5322.
func (m Message) Parsed() (*mail.Message, error) {
	return mail.ReadMessage(bytesReader(m.Data))
}

// Options shape the server.
type Options struct {
	// Username and Password, when set, are the only credentials AUTH PLAIN
	// accepts, and a message needs them.
	Username, Password string
	// TLS offers STARTTLS with a self-signed certificate (Server.RootCAs
	// trusts it); Implicit speaks TLS from the first byte instead (smtps).
	TLS, Implicit bool
	// Delay is how long the server waits before answering MAIL FROM.
	Delay time.Duration
	// Reject refuses every recipient with 550.
	Reject bool
}

// Server is a running SMTP server.
type Server struct {
	Addr string
	// RootCAs trusts the server's certificate (Options.TLS).
	RootCAs *x509.CertPool
	opts    Options
	mu      sync.Mutex
	msgs    []Message
	arrived chan struct{}
}

// Start runs a server on 127.0.0.1 until the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: l.Addr().String(), opts: opts, arrived: make(chan struct{}, 100)}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &session{s: s, conn: c}, nil
	}))
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	srv.ReadTimeout, srv.WriteTimeout = 30*time.Second, 30*time.Second
	if opts.TLS || opts.Implicit {
		cert, pool := selfSigned(t)
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		s.RootCAs = pool
		if opts.Implicit {
			l = tls.NewListener(l, srv.TLSConfig)
			srv.TLSConfig = nil // no STARTTLS inside TLS
		}
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// Messages returns the messages received so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// Wait returns the n-th message (from 1), waiting up to d for it.
func (s *Server) Wait(t testing.TB, n int, d time.Duration) Message {
	t.Helper()
	deadline := time.After(d)
	for {
		if ms := s.Messages(); len(ms) >= n {
			return ms[n-1]
		}
		select {
		case <-s.arrived:
		case <-deadline:
			t.Fatalf("SMTP: message %d did not arrive within %s", n, d)
		}
	}
}

type session struct {
	s      *Server
	conn   *smtp.Conn
	authed string
	msg    Message
}

func (ss *session) AuthMechanisms() []string {
	if ss.s.opts.Username == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != ss.s.opts.Username || password != ss.s.opts.Password {
			return errors.New("invalid credentials")
		}
		ss.authed = username
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	time.Sleep(ss.s.opts.Delay)
	if ss.s.opts.Username != "" && ss.authed == "" {
		return smtp.ErrAuthRequired
	}
	ss.msg = Message{From: from}
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if ss.s.opts.Reject {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox"}
	}
	ss.msg.To = append(ss.msg.To, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	ss.msg.Data, ss.msg.Authed = b, ss.authed
	_, ss.msg.TLS = ss.conn.TLSConnectionState()
	ss.s.mu.Lock()
	ss.s.msgs = append(ss.s.msgs, ss.msg)
	ss.s.mu.Unlock()
	select {
	case ss.s.arrived <- struct{}{}:
	default:
	}
	return nil
}

func (ss *session) Reset()        { ss.msg = Message{} }
func (ss *session) Logout() error { return nil }

func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}
