package fault

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
)

// RetryAfterSeconds is the Retry-After of a SERVICE_UNAVAILABLE answer: a
// database restart takes seconds, and a client that waits this long between
// tries adds little load to a server coming back.
const RetryAfterSeconds = 5

// Unreachable reports whether err says that a store could not be reached or
// went away in the middle of the work (refused or broken connection, a
// server shutting down or starting up), rather than that it refused the
// request: the same request is expected to succeed once the store is back,
// and the API answers 503 SERVICE_UNAVAILABLE, not 500. It knows the
// drivers' errors by what they share, not by their types: SQLSTATE codes
// (PostgreSQL's and pgx's errors have SQLState), net and syscall errors and
// database/sql's own.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		switch code := st.SQLState(); {
		case strings.HasPrefix(code, "08"): // connection exception
			return true
		case code == "57P01", code == "57P02", code == "57P03": // admin or crash shutdown, starting up
			return true
		case code == "53300": // too many connections
			return true
		}
	}
	var op *net.OpError
	var dns *net.DNSError
	switch {
	case errors.As(err, &op), errors.As(err, &dns):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	// pgx reports a connection closed under it in plain words.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "failed to connect to")
}
