package sqlite

import (
	"context"
	"fmt"

	"shortlink.dev/shared/click"
)

// dimsBatch is how many link-days one transaction of fillDims counts.
// (Each also adds its link-day to click_workspace_rollup.)
const dimsBatch = 200

// fillDims counts the cities and operating systems of the link-days that
// migration 0004 listed in click_dims_pending (those clicked before the
// rollups kept them) from their chunks, which hold every event. Each
// link-day's two rows are replaced whole, from all of its chunks, in the
// transaction that deletes it from the list: a fill cut short goes on where
// it stopped, and a link-day clicked meanwhile by this version, whose rows
// the writer added to, is counted right.
func (s *Store) fillDims(ctx context.Context) error {
	for {
		done := false
		err := s.inWriteTx(ctx, func(w *writer) error {
			rows, err := w.tx.QueryContext(ctx, `SELECT link_id, day FROM click_dims_pending
				ORDER BY link_id, day LIMIT $1`, dimsBatch)
			if err != nil {
				return err
			}
			var pending []linkDay
			for rows.Next() {
				var ld linkDay
				if err := rows.Scan(&ld.link, &ld.day); err != nil {
					rows.Close()
					return err
				}
				pending = append(pending, ld)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			if len(pending) == 0 {
				done = true
				return nil
			}
			shares := wsDeltas{}
			for _, ld := range pending {
				if err := w.refillDims(ctx, ld, shares); err != nil {
					return fmt.Errorf("link %s on %s: %w", ld.link, ld.day, err)
				}
			}
			return w.addWorkspaceRollup(ctx, shares)
		})
		if err != nil {
			return fmt.Errorf("count the cities and operating systems of earlier clicks: %w", err)
		}
		if done {
			return nil
		}
	}
}

// refillDims counts a link-day's cities and operating systems from its
// chunks into click_rollup, adds the whole link-day to the workspace's
// shares, and takes it off click_dims_pending.
func (w *writer) refillDims(ctx context.Context, ld linkDay, shares wsDeltas) error {
	rows, err := w.tx.QueryContext(ctx, `SELECT data FROM click_chunks
		WHERE link_id = $1 AND day = $2 AND humans > 0`, ld.link, ld.day)
	if err != nil {
		return err
	}
	cities, systems := keyCounts{}, keyCounts{}
	var events []click.Event
	workspace := ""
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			rows.Close()
			return err
		}
		if events, err = click.DecodeRecord(events[:0], data); err != nil {
			rows.Close()
			return err
		}
		for i := range events {
			workspace = events[i].WorkspaceID
			if !events[i].Bot {
				cities[events[i].City]++
				systems[events[i].OS]++
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, d := range []struct {
		dim    string
		counts keyCounts
	}{{dimCity, cities}, {dimOS, systems}} {
		if len(d.counts) == 0 {
			continue
		}
		if _, err := w.stmt(ctx, stmtRollupPut).ExecContext(ctx, ld.link, d.dim, ld.day, d.counts.encode()); err != nil {
			return err
		}
	}
	if err := w.addLinkDayShares(ctx, workspace, ld, shares); err != nil {
		return err
	}
	_, err = w.tx.ExecContext(ctx, `DELETE FROM click_dims_pending WHERE link_id = $1 AND day = $2`, ld.link, ld.day)
	return err
}
