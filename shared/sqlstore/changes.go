package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/id"
)

var _ bus.Outbox = (*Store)(nil)

// changeHook is called after a transaction stored changes (OnChange).
type changeHook struct{ f atomic.Pointer[func()] }

// OnChange sets the function called after a transaction stored link
// changes in the outbox, so that the relay of this process publishes them at
// once.
func (s *Store) OnChange(f func()) { s.onChange.f.Store(&f) }

func (s *Store) notifyChanged() {
	if f := s.onChange.f.Load(); f != nil {
		(*f)()
	}
}

// writeChanges stores, within tx, the changes ctx carries (bus.WithChanges)
// and returns their ids. A link's change is also a change of every gallery
// page that shows the link (its item shows the link's address, and goes
// when the link is archived): those pages are read in the same transaction,
// so that an item added meanwhile is not missed.
func (s *Store) writeChanges(ctx context.Context, tx *sql.Tx, changes []bus.LinkChange) ([]string, error) {
	seen := map[bus.LinkChange]bool{}
	var all []bus.LinkChange
	add := func(c bus.LinkChange) {
		c.Nonce = ""
		if !seen[c] {
			seen[c] = true
			all = append(all, c)
		}
	}
	pagesOf := map[string]bool{}
	for _, c := range changes {
		add(c)
		if c.Kind != "" || c.LinkID == "" || pagesOf[c.LinkID] {
			continue
		}
		pagesOf[c.LinkID] = true
		rows, err := tx.QueryContext(ctx, `SELECT DISTINCT g.domain, g.slug FROM galleries g
			JOIN gallery_items i ON i.gallery_id = g.id WHERE i.link_id = $1`, c.LinkID)
		if err != nil {
			return nil, fmt.Errorf("read the galleries of a changed link: %w", err)
		}
		for rows.Next() {
			p := bus.LinkChange{Kind: bus.KindGallery}
			if err := rows.Scan(&p.Domain, &p.Slug); err != nil {
				rows.Close()
				return nil, err
			}
			add(p)
		}
		if err := closeRows(rows); err != nil {
			return nil, fmt.Errorf("read the galleries of a changed link: %w", err)
		}
	}
	now := micros(s.Now())
	ids := make([]string, 0, len(all))
	for _, c := range all {
		cid := id.New("chg_")
		if _, err := tx.ExecContext(ctx, `INSERT INTO change_outbox (id, kind, link_id, domain, slug, created_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, cid, c.Kind, c.LinkID, c.Domain, c.Slug, now); err != nil {
			return nil, fmt.Errorf("store a link change: %w", err)
		}
		ids = append(ids, cid)
	}
	return ids, nil
}

// ClaimChanges implements bus.Outbox. On PostgreSQL concurrent claimers skip
// each other's rows (FOR UPDATE SKIP LOCKED); SQLite's transactions take the
// database's write lock, so they take turns.
func (s *Store) ClaimChanges(ctx context.Context, owner string, now, leaseUntil time.Time, n int) ([]bus.StoredChange, error) {
	lock := ""
	if s.dialect == postgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	var out []bus.StoredChange
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, kind, link_id, domain, slug, created_at FROM change_outbox
			WHERE lease_until IS NULL OR lease_until < $1 ORDER BY created_at, id LIMIT $2`+lock, micros(now), n)
		if err != nil {
			return err
		}
		for rows.Next() {
			var c bus.StoredChange
			var created int64
			if err := rows.Scan(&c.ID, &c.Kind, &c.LinkID, &c.Domain, &c.Slug, &created); err != nil {
				rows.Close()
				return err
			}
			c.CreatedAt = fromMicros(created)
			out = append(out, c)
		}
		if err := closeRows(rows); err != nil {
			return err
		}
		if len(out) == 0 {
			return nil
		}
		ids := make([]string, len(out))
		for i, c := range out {
			ids[i] = c.ID
		}
		marks, args := inList(ids)
		k := len(args)
		args = append(args, owner, micros(leaseUntil))
		_, err = tx.ExecContext(ctx, `UPDATE change_outbox SET lease_owner = $`+strconv.Itoa(k+1)+
			`, lease_until = $`+strconv.Itoa(k+2)+` WHERE id IN (`+marks+`)`, args...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim link changes: %w", err)
	}
	return out, nil
}

// DeleteChanges implements bus.Outbox.
func (s *Store) DeleteChanges(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	marks, args := inList(ids)
	if _, err := s.db.ExecContext(ctx, `DELETE FROM change_outbox WHERE id IN (`+marks+`)`, args...); err != nil {
		return fmt.Errorf("delete published link changes: %w", err)
	}
	return nil
}

// ReleaseChanges implements bus.Outbox.
func (s *Store) ReleaseChanges(ctx context.Context, owner string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	marks, args := inList(ids)
	args = append(args, owner)
	_, err := s.db.ExecContext(ctx, `UPDATE change_outbox SET lease_owner = NULL, lease_until = NULL
		WHERE lease_owner = $`+strconv.Itoa(len(args))+` AND id IN (`+marks+`)`, args...)
	if err != nil {
		return fmt.Errorf("release link changes: %w", err)
	}
	return nil
}

// ReleaseOwner implements bus.Outbox.
func (s *Store) ReleaseOwner(ctx context.Context, owner string) (int, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE change_outbox SET lease_owner = NULL, lease_until = NULL
		WHERE lease_owner = $1`, owner)
	if err != nil {
		return 0, fmt.Errorf("release link changes: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("release link changes: %w", err)
	}
	return int(n), nil
}

// ChangeBacklog implements bus.Outbox.
func (s *Store) ChangeBacklog(ctx context.Context) (bus.Backlog, error) {
	var b bus.Backlog
	var oldest sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*), MIN(created_at) FROM change_outbox`).Scan(&b.Pending, &oldest); err != nil {
		return b, fmt.Errorf("read the change outbox: %w", err)
	}
	if oldest.Valid {
		b.Oldest = fromMicros(oldest.Int64)
	}
	return b, nil
}
