package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"shortlink.dev/shared/stats"
)

// dimTotal is the row of click_workspace_rollup that holds, under key "",
// the workspace-day's clicks and the sum of its link-days' visitors.
const dimTotal = "total"

// wsDayDim names a row of click_workspace_rollup.
type wsDayDim struct{ workspace, dim, day string }

// wsDelta is what a transaction adds to a row of click_workspace_rollup:
// clicks and shares of visitors (thousandths, stats.Share) per key.
type wsDelta struct {
	clicks, shares map[string]int64
}

// wsDeltas are a transaction's additions to click_workspace_rollup.
type wsDeltas map[wsDayDim]*wsDelta

func (d wsDeltas) add(workspace, dim, day, key string, clicks, shares int64) {
	k := wsDayDim{workspace, dim, day}
	r := d[k]
	if r == nil {
		r = &wsDelta{clicks: map[string]int64{}, shares: map[string]int64{}}
		d[k] = r
	}
	r.clicks[key] += clicks
	r.shares[key] += shares
}

// addWorkspaceRollup adds the deltas to click_workspace_rollup, row by
// row in key order.
func (w *writer) addWorkspaceRollup(ctx context.Context, deltas wsDeltas) error {
	keys := sortedKeys(deltas, func(a, b wsDayDim) int {
		return cmp.Or(cmp.Compare(a.workspace, b.workspace), cmp.Compare(a.dim, b.dim), cmp.Compare(a.day, b.day))
	})
	for _, k := range keys {
		var storedCounts, storedShares []byte
		err := w.stmt(ctx, stmtWsRollupGet).QueryRowContext(ctx, k.workspace, k.dim, k.day).Scan(&storedCounts, &storedShares)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("count clicks of workspace %s: %w", k.workspace, err)
		}
		counts, shares := keyCounts{}, keyCounts{}
		if err := decodeCounts(counts, storedCounts); err != nil {
			return fmt.Errorf("count clicks of workspace %s: %w", k.workspace, err)
		}
		if err := decodeCounts(shares, storedShares); err != nil {
			return fmt.Errorf("count clicks of workspace %s: %w", k.workspace, err)
		}
		d := deltas[k]
		for key, n := range d.clicks {
			counts[key] += n
		}
		for key, n := range d.shares {
			// Never below zero: the sums of shares are sums of
			// non-negative shares, kept exactly.
			shares[key] = max(shares[key]+n, 0)
		}
		if _, err := w.stmt(ctx, stmtWsRollupPut).ExecContext(ctx, k.workspace, k.dim, k.day,
			counts.encode(), shares.encode()); err != nil {
			return fmt.Errorf("count clicks of workspace %s: %w", k.workspace, err)
		}
	}
	return nil
}

// countsInWorkspace reports whether a link-day's clicks are counted in
// click_workspace_rollup as they are written: not while the link-day waits
// in click_dims_pending, whose fill counts it whole. The list only shrinks,
// and is empty once this store's Open filled it.
func (w *writer) countsInWorkspace(ctx context.Context, ld linkDay) (bool, error) {
	if w.s.dimsFilled.Load() {
		return true, nil
	}
	var one int
	err := w.tx.QueryRowContext(ctx, `SELECT 1 FROM click_dims_pending WHERE link_id = $1 AND day = $2`,
		ld.link, ld.day).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return true, nil
	}
	return false, err
}

// addLinkDayShares adds a whole link-day, as click_days and click_rollup
// hold it, to deltas (the fill of the link-days clicked before the
// workspace rollup).
func (w *writer) addLinkDayShares(ctx context.Context, workspace string, ld linkDay, deltas wsDeltas) error {
	var day dayCount
	err := w.tx.QueryRowContext(ctx, `SELECT clicks, visitors FROM click_days WHERE link_id = $1 AND day = $2`,
		ld.link, ld.day).Scan(&day.clicks, &day.visitors)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	deltas.add(workspace, dimTotal, ld.day, "", day.clicks, day.visitors*stats.Milli)
	for _, dim := range rollupDims {
		var stored []byte
		err := w.stmt(ctx, stmtRollupGet).QueryRowContext(ctx, ld.link, dim, ld.day).Scan(&stored)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return err
		}
		counts := keyCounts{}
		if err := decodeCounts(counts, stored); err != nil {
			return err
		}
		for key, n := range counts {
			deltas.add(workspace, dim, ld.day, key, n, stats.Share(day.visitors, n, day.clicks))
		}
	}
	return nil
}
