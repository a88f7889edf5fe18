package sqlstore

import (
	"context"
	"net"
	"testing"
	"time"

	"shortlink.dev/shared/fault"
)

func TestWithConnectTimeout(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgres://u@h:5432/db?sslmode=disable", "postgres://u@h:5432/db?connect_timeout=5&sslmode=disable"},
		{"postgresql://u@h/db", "postgresql://u@h/db?connect_timeout=5"},
		{"postgres://u@h/db?connect_timeout=30", "postgres://u@h/db?connect_timeout=30"},
		{"host=h user=u", "host=h user=u"},
	}
	for _, tc := range tests {
		if got := withConnectTimeout(tc.in); got != tc.want {
			t.Errorf("withConnectTimeout(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestConnectToSilentServerIsBounded: a server that takes the TCP
// connection and never answers is given up on within the connect timeout,
// with an error the API answers 503 for, not waited for forever.
func TestConnectToSilentServerIsBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // never a byte back
		}
	}()
	start := time.Now()
	_, err = OpenPostgres(context.Background(), "postgres://u@"+ln.Addr().String()+"/db?sslmode=disable")
	took := time.Since(start)
	if err == nil {
		t.Fatal("opened a store on a server that never answers")
	}
	if took > connectTimeout+5*time.Second {
		t.Errorf("gave up after %v, want about %v", took, connectTimeout)
	}
	if !fault.Unreachable(err) {
		t.Errorf("fault.Unreachable(%v) = false, want true: the API would answer 500", err)
	}
}
