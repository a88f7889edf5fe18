package fault

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
)

// sqlStateError is a driver error with a SQLSTATE, as pgconn.PgError is.
type sqlStateError string

func (e sqlStateError) Error() string    { return "ERROR (SQLSTATE " + string(e) + ")" }
func (e sqlStateError) SQLState() string { return string(e) }

func TestUnreachable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"refused, wrapped", fmt.Errorf("cannot get link: %w", refused), true},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"bad conn", driver.ErrBadConn, true},
		{"conn done", fmt.Errorf("commit: %w", sql.ErrConnDone), true},
		{"unexpected EOF", fmt.Errorf("failed to receive message: %w", io.ErrUnexpectedEOF), true},
		{"admin shutdown", sqlStateError("57P01"), true},
		{"starting up", fmt.Errorf("failed to connect: %w", sqlStateError("57P03")), true},
		{"connection failure", sqlStateError("08006"), true},
		{"too many connections", sqlStateError("53300"), true},
		{"pgx closed conn", errors.New("conn closed"), true},
		// The database answered: a bug or a conflict, not an outage.
		{"unique violation", sqlStateError("23505"), false},
		{"syntax error", sqlStateError("42601"), false},
		{"no rows", sql.ErrNoRows, false},
		{"plain", errors.New("boom"), false},
		{"canceled", context.Canceled, false},
		{"coded", New(NotFound, "link not found"), false},
	}
	for _, tc := range tests {
		if got := Unreachable(tc.err); got != tc.want {
			t.Errorf("%s: Unreachable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
