package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// TakeTry counts a password try of key at now and returns the tries counted
// in key's window, this one included, and when the window started. A try
// at or after the end of the window (start + window) starts a new one. One
// statement does it: concurrent tries, from any number of edges, each get
// their own count.
func (s *Store) TakeTry(ctx context.Context, key string, now time.Time, window time.Duration) (int64, time.Time, error) {
	return s.takeTry(ctx, "password_tries", key, now, window)
}

// TakeSignInTry is TakeTry for the dashboard's sign-in by password, in a
// table of its own (signin_tries): the edge sweeps password_tries by its
// own window.
func (s *Store) TakeSignInTry(ctx context.Context, key string, now time.Time, window time.Duration) (int64, time.Time, error) {
	return s.takeTry(ctx, "signin_tries", key, now, window)
}

// GiveBackSignInTry is GiveBackTry for TakeSignInTry.
func (s *Store) GiveBackSignInTry(ctx context.Context, key string, start time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE signin_tries SET tries = tries - 1
		WHERE try_key = $1 AND window_start = $2 AND tries > 0`, key, micros(start))
	if err != nil {
		return fmt.Errorf("cannot give back a sign-in try: %w", err)
	}
	return nil
}

// SignInTries returns key's tries in the window that is open at now
// (0 when none is), counting none.
func (s *Store) SignInTries(ctx context.Context, key string, now time.Time, window time.Duration) (int64, time.Time, error) {
	var n, start int64
	err := s.db.QueryRowContext(ctx, `SELECT tries, window_start FROM signin_tries WHERE try_key = $1 AND window_start > $2`,
		key, micros(now.Add(-window))).Scan(&n, &start)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, now, nil
	}
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("cannot read sign-in tries: %w", err)
	}
	return n, fromMicros(start), nil
}

// DeleteSignInTriesBefore deletes the sign-in windows that started at or before t.
func (s *Store) DeleteSignInTriesBefore(ctx context.Context, t time.Time) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM signin_tries WHERE window_start <= $1`, micros(t)); err != nil {
		return fmt.Errorf("cannot delete old sign-in tries: %w", err)
	}
	return nil
}

// takeTry is TakeTry on table (a constant of this file, never input).
func (s *Store) takeTry(ctx context.Context, table, key string, now time.Time, window time.Duration) (int64, time.Time, error) {
	var n, start int64
	// In SET, both CASEs read the row as it was before the update.
	err := s.db.QueryRowContext(ctx, `INSERT INTO `+table+` (try_key, window_start, tries) VALUES ($1, $2, 1)
		ON CONFLICT (try_key) DO UPDATE SET
			tries = CASE WHEN `+table+`.window_start <= $3 THEN 1 ELSE `+table+`.tries + 1 END,
			window_start = CASE WHEN `+table+`.window_start <= $3 THEN excluded.window_start
				ELSE `+table+`.window_start END
		RETURNING tries, window_start`, key, micros(now), micros(now.Add(-window))).Scan(&n, &start)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("cannot count a password try: %w", err)
	}
	return n, fromMicros(start), nil
}

// GiveBackTry uncounts a try of key taken in the window that started at
// start (a right password is no wrong try); in a later window it does nothing.
func (s *Store) GiveBackTry(ctx context.Context, key string, start time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE password_tries SET tries = tries - 1
		WHERE try_key = $1 AND window_start = $2 AND tries > 0`, key, micros(start))
	if err != nil {
		return fmt.Errorf("cannot give back a password try: %w", err)
	}
	return nil
}

// DeleteTriesBefore deletes the windows that started at or before t: with t
// the start of the current window's span, those have ended.
func (s *Store) DeleteTriesBefore(ctx context.Context, t time.Time) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM password_tries WHERE window_start <= $1`, micros(t)); err != nil {
		return fmt.Errorf("cannot delete old password tries: %w", err)
	}
	return nil
}
