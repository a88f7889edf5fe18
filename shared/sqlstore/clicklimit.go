package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// A link's clickLimit is charged on limitShards rows of link_limit_shards, so
// that the clicks of a hot limited link spread over several row locks instead
// of queueing on one (and never wait on the links row, which API writes need).
//
// Shard i may charge quota-used more clicks, and ChargeClick increments used
// only while used < quota, in one statement, under the shard's row lock: a
// charge is exact without any other coordination. The writers of a link
// (CreateLink, UpdateLink, which hold the link's row) keep
//
//	sum(quota) = max(click_limit, sum(used))
//
// by rebalancing: with the shards locked, each shard's quota becomes its used
// plus an even share of what is left of the limit. So the clicks charged never
// pass the limit, also after it is lowered, and when they reach it every shard
// is used up. A link has shard rows exactly when it has a clickLimit.
//
// links.click_limit_used is no longer charged. It parks the use of a link
// whose limit is removed (its shards deleted) so that, as before, setting a
// limit again counts what was used under the old one; it is 0 while the link
// has shards.
//
// The ledger, sum(used) plus the parked use, is also the floor of the link's
// clickCount (clickCount in links.go): it decided the redirects, and a crash
// between a charge and the click pipeline loses the click from the stats
// only.
const limitShards = 8

// ChargeClick uses up one click of the link's clickLimit. It reports false when
// the limit is reached already (or the link does not exist). The check and the
// increment are one statement on one shard, so concurrent clicks on every edge
// are charged exactly up to the limit. A link without a limit is always
// charged, and nothing is written.
//
// The hot path is one statement on a random shard. When that shard is used up
// (or the link has no limit) a second statement charges any shard that has
// some left, and tells apart "no limit", "used up" and "every shard with some
// left is locked by a concurrent charge", which it retries.
func (s *Store) ChargeClick(ctx context.Context, linkID string) (bool, error) {
	shard := rand.IntN(limitShards)
	res, err := s.db.ExecContext(ctx, `UPDATE link_limit_shards SET used = used + 1
		WHERE link_id = $1 AND shard = $2 AND used < quota`, linkID, shard)
	if err != nil {
		return false, fmt.Errorf("charge click: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return false, fmt.Errorf("charge click: %w", err)
	} else if n == 1 {
		return true, nil
	}
	for attempt := 0; ; attempt++ {
		r, err := s.chargeAnyShard(ctx, linkID, shard)
		if err != nil {
			return false, fmt.Errorf("charge click: %w", err)
		}
		switch {
		case r.charged:
			return true, nil
		case r.shards == 0:
			return r.linkExists, nil
		case r.open == 0:
			return false, nil
		}
		if err := backoff(ctx, attempt); err != nil {
			return false, fmt.Errorf("charge click: %w", err)
		}
	}
}

// chargeResult is what chargeAnyShard did and saw.
type chargeResult struct {
	charged    bool
	shards     int  // the link's shard rows: 0 without a limit
	open       int  // shards with some left
	linkExists bool // whether the link exists
}

// chargeAnyShard charges a shard that has some left, trying those after
// skipShard first. When it charges none, open > 0 tells that some shard had
// some left but was locked: the caller retries.
func (s *Store) chargeAnyShard(ctx context.Context, linkID string, skipShard int) (chargeResult, error) {
	var r chargeResult
	if s.dialect == postgres {
		// SKIP LOCKED: a shard that a concurrent charge holds is passed over,
		// not waited for. The counts read the statement's snapshot.
		var charged int
		err := s.db.QueryRowContext(ctx, `WITH pick AS (
				SELECT shard FROM link_limit_shards WHERE link_id = $1 AND used < quota
				ORDER BY shard <= $2, shard LIMIT 1 FOR UPDATE SKIP LOCKED),
			charged AS (
				UPDATE link_limit_shards SET used = used + 1
				WHERE link_id = $1 AND shard = (SELECT shard FROM pick) AND used < quota
				RETURNING shard)
			SELECT (SELECT COUNT(*) FROM charged), COUNT(*),
				COALESCE(SUM(CASE WHEN used < quota THEN 1 ELSE 0 END), 0),
				EXISTS (SELECT 1 FROM links WHERE id = $1)
			FROM link_limit_shards WHERE link_id = $1`, linkID, skipShard).
			Scan(&charged, &r.shards, &r.open, &r.linkExists)
		r.charged = charged > 0
		return r, err
	}
	// SQLite has one writer at a time: a plain subquery picks a shard that
	// nobody can charge before the update does.
	res, err := s.db.ExecContext(ctx, `UPDATE link_limit_shards SET used = used + 1
		WHERE link_id = $1 AND used < quota AND shard = (
			SELECT shard FROM link_limit_shards WHERE link_id = $1 AND used < quota
			ORDER BY shard <= $2, shard LIMIT 1)`, linkID, skipShard)
	if err != nil {
		return r, err
	}
	n, err := res.RowsAffected()
	if err != nil || n == 1 {
		r.charged = n == 1
		return r, err
	}
	// Read apart from the update: should a concurrent writer have set or
	// raised the limit in between, open > 0 makes the caller try again.
	err = s.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(CASE WHEN used < quota THEN 1 ELSE 0 END), 0),
			EXISTS (SELECT 1 FROM links WHERE id = $1)
		FROM link_limit_shards WHERE link_id = $1`, linkID).Scan(&r.shards, &r.open, &r.linkExists)
	return r, err
}

// backoff waits a little before the attempt-th retry of a charge whose
// shards were all locked: not at all at first (a charge holds a shard for one
// statement), longer if a link writer holds them for its transaction.
func backoff(ctx context.Context, attempt int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if attempt < 2 {
		return nil
	}
	d := min(time.Duration(attempt)*50*time.Microsecond, 2*time.Millisecond)
	t := time.NewTimer(d/2 + rand.N(d/2+1))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ClickLimitReached reports whether the link's clickLimit is used up (true too
// for a link that does not exist).
func (s *Store) ClickLimitReached(ctx context.Context, linkID string) (bool, error) {
	var links, shards int
	var used, quota int64
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(l.id), COUNT(s.shard), COALESCE(SUM(s.used), 0), COALESCE(SUM(s.quota), 0)
		FROM links l LEFT JOIN link_limit_shards s ON s.link_id = l.id WHERE l.id = $1`,
		linkID).Scan(&links, &shards, &used, &quota)
	if err != nil {
		return false, fmt.Errorf("read click limit: %w", err)
	}
	// sum(quota) = max(click_limit, sum(used)) makes this sum(used) >= click_limit.
	return links == 0 || shards > 0 && used >= quota, nil
}

// syncClickLimit makes the link's shards follow its clickLimit (nil: none)
// within tx, which holds the link's row (CreateLink inserted it, UpdateLink
// updated it): concurrent writers of the link's limit wait for each other.
// Charges go on meanwhile, but not on the shards it rebalances, which it locks.
func (s *Store) syncClickLimit(ctx context.Context, tx *sql.Tx, linkID string, limit *int64) error {
	// Only the link's writers change quota, so the sum read without a lock is
	// current; used may grow, but not past quota.
	var n int
	var quota, used int64
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(quota), 0), COALESCE(SUM(used), 0)
		FROM link_limit_shards WHERE link_id = $1`, linkID).Scan(&n, &quota, &used); err != nil {
		return err
	}
	if limit == nil {
		if n == 0 {
			return nil
		}
		return s.dropLimitShards(ctx, tx, linkID)
	}
	want := max(*limit, 0)
	// Balanced already: the limit is unchanged, or it was lowered below the
	// use and every shard is used up (as a rebalance would leave them).
	if n == limitShards && (quota == want || quota > want && used == quota) {
		return nil
	}
	if n < limitShards {
		if err := s.addLimitShards(ctx, tx, linkID, n == 0); err != nil {
			return err
		}
	}
	return s.rebalanceLimitShards(ctx, tx, linkID, want)
}

// addLimitShards inserts the link's missing shards, empty. A link's first
// shards take its parked use (see limitShards) on shard 0.
func (s *Store) addLimitShards(ctx context.Context, tx *sql.Tx, linkID string, first bool) error {
	var parked int64
	if first {
		if err := tx.QueryRowContext(ctx, `SELECT click_limit_used FROM links WHERE id = $1`, linkID).Scan(&parked); err != nil {
			return err
		}
	}
	rows := make([]string, limitShards)
	for i := range rows {
		rows[i] = fmt.Sprintf("($1, %d, 0, 0)", i)
	}
	rows[0] = "($1, 0, CAST($2 AS BIGINT), CAST($2 AS BIGINT))"
	if _, err := tx.ExecContext(ctx, `INSERT INTO link_limit_shards (link_id, shard, quota, used) VALUES `+
		strings.Join(rows, ", ")+` ON CONFLICT (link_id, shard) DO NOTHING`, linkID, parked); err != nil {
		return err
	}
	if parked == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE links SET click_limit_used = 0 WHERE id = $1`, linkID)
	return err
}

// lockLimitShards returns the used of each of the link's shards (by shard
// number), locked in shard order on PostgreSQL. SQLite needs no lock: its
// transactions take the database's write lock.
func (s *Store) lockLimitShards(ctx context.Context, tx *sql.Tx, linkID string) (used int64, err error) {
	q := `SELECT used FROM link_limit_shards WHERE link_id = $1 ORDER BY shard`
	if s.dialect == postgres {
		q += ` FOR UPDATE`
	}
	rows, err := tx.QueryContext(ctx, q, linkID)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var u int64
		if err := rows.Scan(&u); err != nil {
			return 0, err
		}
		used += u
	}
	return used, rows.Err()
}

// rebalanceLimitShards gives each of the link's shards its used plus an even
// share of what is left of limit: sum(quota) = max(limit, sum(used)).
func (s *Store) rebalanceLimitShards(ctx context.Context, tx *sql.Tx, linkID string, limit int64) error {
	used, err := s.lockLimitShards(ctx, tx, linkID)
	if err != nil {
		return err
	}
	left := max(limit-used, 0)
	// Shards from limitShards on (none unless limitShards is lowered one day)
	// get no share.
	_, err = tx.ExecContext(ctx, `UPDATE link_limit_shards SET quota = used + CASE
			WHEN shard >= $2 THEN 0 WHEN shard < $3 THEN CAST($4 AS BIGINT) + 1 ELSE CAST($4 AS BIGINT) END
		WHERE link_id = $1`, linkID, limitShards, left%limitShards, left/limitShards)
	return err
}

// dropLimitShards deletes the link's shards, its limit removed, and parks
// their use on the link.
func (s *Store) dropLimitShards(ctx context.Context, tx *sql.Tx, linkID string) error {
	used, err := s.lockLimitShards(ctx, tx, linkID)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM link_limit_shards WHERE link_id = $1`, linkID); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE links SET click_limit_used = click_limit_used + $2 WHERE id = $1`, linkID, used)
	return err
}
