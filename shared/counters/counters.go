// Package counters is the one way the analytics plane writes back the
// counters that the control plane shows with its records: a link's
// click_count and last_clicked_at, and a dynamic QR code's scan_count. The
// control plane's store (shared/sqlstore) implements Store; both click stores
// (analytics/sqlite and analytics/clickhouse) write through it, so that
// neither knows the tables that hold the counters.
//
// A click store counts in one of two ways, and Store takes both:
//
//   - absolutely (ClickHouse): after storing a batch, it reads from its own
//     rollups every human click ever stored of the batch's links and codes,
//     and raises the counters to those numbers (SetLinkCounters,
//     SetQRScanCounts). Writing the same numbers twice changes nothing, so a
//     batch redelivered after a crash between the clicks and the counters
//     puts them right, and never counts twice.
//   - by adding (SQLite): a click store in the same database adds the batch's
//     newly stored human clicks to the counters (AddCounters) inside the
//     transaction that stores the clicks, so that both commit, or neither:
//     a redelivered batch finds its events stored and adds nothing.
//
// Either way the counters never go down, and each human click counts once.
package counters

import (
	"context"
	"database/sql"
	"time"
)

// Link is a link's click counters as the analytics plane counts them: its
// human clicks and the time of the latest.
type Link struct {
	LinkID string
	Count  int64
	// LastClickedAt is nil before the first human click.
	LastClickedAt *time.Time
}

// QRScans is a dynamic QR code's scans as the analytics plane counts them:
// the human clicks of its link that carried ?qr={id}.
type QRScans struct {
	QRID, LinkID string
	Count        int64
}

// Store keeps the counters where the control plane reads them. It is safe
// for concurrent use.
type Store interface {
	// SetLinkCounters raises the links' click_count and last_clicked_at to
	// the given absolute values; neither ever goes down. Links that do not
	// exist (deleted meanwhile) are skipped.
	SetLinkCounters(ctx context.Context, links []Link) error
	// SetQRScanCounts raises the codes' scan_count to the given absolute
	// values; it never goes down. A code counts only scans of its own link:
	// a pair whose code is not of that link changes nothing.
	SetQRScanCounts(ctx context.Context, scans []QRScans) error
	// AddCounters adds a batch's newly stored clicks to the links'
	// click_count and the codes' scan_count, and moves last_clicked_at
	// forward to the given time (batches may arrive out of order). It runs
	// in tx, a transaction on the store's own database, begun by a click
	// store that keeps its clicks there: the counters commit or roll back
	// with the clicks. Links and codes that do not exist are skipped, as is
	// a code of another link.
	AddCounters(ctx context.Context, tx *sql.Tx, links []Link, scans []QRScans) error
	// LinkCounters returns a link's counters, or a NOT_FOUND error.
	LinkCounters(ctx context.Context, linkID string) (Link, error)
	// QRScanCount returns a code's scan_count, or a NOT_FOUND error.
	QRScanCount(ctx context.Context, qrID string) (int64, error)
}
