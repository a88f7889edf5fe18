package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/webhook"
)

var _ webhook.Store = (*Store)(nil)

const webhookColumns = `id, workspace_id, name, url, events, secret, is_active, consecutive_failures, created_at, updated_at`

const deliveryColumns = `id, webhook_id, workspace_id, message_id, event, payload, status, attempts,
	response_status, response_time_ms, response_body, error, created_at, last_attempt_at, next_attempt_at`

// CreateWebhook implements webhook.Store.
func (s *Store) CreateWebhook(ctx context.Context, w *webhook.Webhook) error {
	events, err := json.Marshal(w.Events)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO webhooks (`+webhookColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			w.ID, w.WorkspaceID, w.Name, w.URL, string(events), w.Secret, w.IsActive, w.ConsecutiveFailures,
			micros(w.CreatedAt), micros(w.UpdatedAt)); err != nil {
			return fmt.Errorf("create webhook: %w", err)
		}
		return bumpWebhookGeneration(ctx, tx)
	})
}

// GetWebhook implements webhook.Store.
func (s *Store) GetWebhook(ctx context.Context, workspaceID, id string) (*webhook.Webhook, error) {
	w, err := scanWebhook(s.db.QueryRowContext(ctx, `SELECT `+webhookColumns+` FROM webhooks
		WHERE id = $1 AND workspace_id = $2`, id, workspaceID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.NotFoundf("webhook")
	}
	if err != nil {
		return nil, fmt.Errorf("get webhook: %w", err)
	}
	return w, nil
}

// UpdateWebhook implements webhook.Store.
func (s *Store) UpdateWebhook(ctx context.Context, w *webhook.Webhook, readAt time.Time, resetFailures bool) error {
	events, err := json.Marshal(w.Events)
	if err != nil {
		return err
	}
	var failures int
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `UPDATE webhooks SET name = $3, url = $4, events = $5, secret = $6,
			consecutive_failures = CASE WHEN $9 THEN 0 ELSE consecutive_failures END,
			unreachable_attempts = CASE WHEN $9 THEN 0 ELSE unreachable_attempts END,
			breaker_opens = CASE WHEN $9 THEN 0 ELSE breaker_opens END,
			paused_until = CASE WHEN $9 THEN NULL ELSE paused_until END,
			is_active = $7, updated_at = $8
			WHERE id = $1 AND workspace_id = $2 AND updated_at = $10 RETURNING consecutive_failures`,
			w.ID, w.WorkspaceID, w.Name, w.URL, string(events), w.Secret, w.IsActive, micros(w.UpdatedAt),
			resetFailures, micros(readAt)).Scan(&failures); err != nil {
			return err
		}
		return bumpWebhookGeneration(ctx, tx)
	})
	if err == nil {
		w.ConsecutiveFailures = failures
	}
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := s.GetWebhook(ctx, w.WorkspaceID, w.ID); err != nil {
			return err
		}
		return webhook.ErrChanged
	}
	if err != nil {
		return fmt.Errorf("update webhook: %w", err)
	}
	return nil
}

// DeleteWebhook implements webhook.Store.
func (s *Store) DeleteWebhook(ctx context.Context, workspaceID, id string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE webhook_id IN
			(SELECT id FROM webhooks WHERE id = $1 AND workspace_id = $2)`, id, workspaceID); err != nil {
			return fmt.Errorf("delete webhook: %w", err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM webhooks WHERE id = $1 AND workspace_id = $2`, id, workspaceID)
		if err := affectedOne(res, err, "delete webhook", "webhook"); err != nil {
			return err
		}
		return bumpWebhookGeneration(ctx, tx)
	})
}

// bumpWebhookGeneration moves, within tx, the webhook generation that the
// click pipeline compares with the one its cached subscriptions were read at
// (WebhookGeneration): every transaction that changes a webhook calls it.
// On PostgreSQL it locks the one row until tx ends, so webhook changes commit
// one at a time; they are rare, and take this lock last.
func bumpWebhookGeneration(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `UPDATE webhook_generation SET generation = generation + 1 WHERE id = 1`); err != nil {
		return fmt.Errorf("bump the webhook generation: %w", err)
	}
	return nil
}

// WebhookGeneration returns the webhook generation: a counter that moves with
// every committed change of a webhook (create, update, delete, disabled
// after failures). Subscriptions read after it returned g are at least as
// new as every change that moved it to g.
func (s *Store) WebhookGeneration(ctx context.Context) (int64, error) {
	var g int64
	if err := s.db.QueryRowContext(ctx, `SELECT generation FROM webhook_generation WHERE id = 1`).Scan(&g); err != nil {
		return 0, fmt.Errorf("read the webhook generation: %w", err)
	}
	return g, nil
}

// ListWebhooks implements webhook.Store: oldest first.
func (s *Store) ListWebhooks(ctx context.Context, f webhook.Filter) ([]*webhook.Webhook, int, error) {
	total, err := s.count(ctx, `SELECT COUNT(*) FROM webhooks WHERE workspace_id = $1`, f.WorkspaceID, "count webhooks")
	if err != nil {
		return nil, 0, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE workspace_id = $1
		ORDER BY created_at, id LIMIT $2 OFFSET $3`, f.WorkspaceID, f.Limit, f.Offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list webhooks: %w", err)
	}
	defer rows.Close()
	out := []*webhook.Webhook{}
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list webhooks: %w", err)
		}
		out = append(out, w)
	}
	return out, total, rows.Err()
}

// CountWebhooks implements webhook.Store.
func (s *Store) CountWebhooks(ctx context.Context, workspaceID string) (int, error) {
	return s.count(ctx, `SELECT COUNT(*) FROM webhooks WHERE workspace_id = $1`, workspaceID, "count webhooks")
}

// ListDeliveries implements webhook.Store.
func (s *Store) ListDeliveries(ctx context.Context, f webhook.Filter) ([]*webhook.Delivery, int, error) {
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhook_deliveries WHERE webhook_id = $1 AND workspace_id = $2`,
		f.WebhookID, f.WorkspaceID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count deliveries: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries
		WHERE webhook_id = $1 AND workspace_id = $2 ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`,
		f.WebhookID, f.WorkspaceID, f.Limit, f.Offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list deliveries: %w", err)
	}
	defer rows.Close()
	out := []*webhook.Delivery{}
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list deliveries: %w", err)
		}
		out = append(out, d)
	}
	return out, total, rows.Err()
}

// GetDelivery implements webhook.Store.
func (s *Store) GetDelivery(ctx context.Context, workspaceID, id string) (*webhook.Delivery, error) {
	d, err := scanDelivery(s.db.QueryRowContext(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries
		WHERE id = $1 AND workspace_id = $2`, id, workspaceID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.NotFoundf("delivery")
	}
	if err != nil {
		return nil, fmt.Errorf("get delivery: %w", err)
	}
	return d, nil
}

// EnqueueTo implements webhook.Store.
func (s *Store) EnqueueTo(ctx context.Context, w *webhook.Webhook, m webhook.Message, owner string, leaseUntil time.Time) (*webhook.Delivery, error) {
	now := s.Now().UTC().Truncate(time.Microsecond)
	d := &webhook.Delivery{
		ID: id.New(id.Delivery), WebhookID: w.ID, WorkspaceID: w.WorkspaceID, MessageID: m.ID, Event: m.Event,
		Payload: m.Payload, Status: webhook.StatusPending, CreatedAt: now, NextAttemptAt: &now,
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO webhook_deliveries (id, webhook_id, workspace_id, message_id,
		event, payload, status, created_at, next_attempt_at, lease_owner, lease_until)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		d.ID, d.WebhookID, d.WorkspaceID, d.MessageID, d.Event, string(d.Payload), string(d.Status),
		micros(now), micros(now), owner, micros(leaseUntil)); err != nil {
		return nil, fmt.Errorf("enqueue delivery: %w", err)
	}
	return d, nil
}

// EnqueueMessages stores the messages in the outbox in one transaction:
// a pending delivery per message and active webhook of its workspace that
// subscribes to its event. A message already enqueued to a webhook (the same
// message id) is not enqueued again.
func (s *Store) EnqueueMessages(ctx context.Context, msgs []webhook.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	return s.inTx(webhook.WithMessages(ctx, msgs...), func(*sql.Tx) error { return nil })
}

// WebhookEvents returns, for each of the workspaces that has active
// webhooks, the events they subscribe to ("*" included as it is).
func (s *Store) WebhookEvents(ctx context.Context, workspaceIDs []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(workspaceIDs) == 0 {
		return out, nil
	}
	marks, args := inList(workspaceIDs)
	rows, err := s.db.QueryContext(ctx, `SELECT workspace_id, events FROM webhooks
		WHERE is_active = TRUE AND workspace_id IN (`+marks+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("read webhook subscriptions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ws, events string
		if err := rows.Scan(&ws, &events); err != nil {
			return nil, fmt.Errorf("read webhook subscriptions: %w", err)
		}
		var list []string
		if err := json.Unmarshal([]byte(events), &list); err != nil {
			return nil, fmt.Errorf("webhook events of workspace %s: %w", ws, err)
		}
		out[ws] = append(out[ws], list...)
	}
	return out, rows.Err()
}

// writeOutbox stores, within tx, the messages ctx carries (WithMessages):
// a pending delivery per message and subscribed active webhook. It reports
// whether it stored any.
func (s *Store) writeOutbox(ctx context.Context, tx *sql.Tx, msgs []webhook.Message) (bool, error) {
	hooks := map[string][]*webhook.Webhook{}
	now := micros(s.Now())
	var insert *sql.Stmt
	defer func() {
		if insert != nil {
			insert.Close()
		}
	}()
	wrote := false
	for _, m := range msgs {
		list, ok := hooks[m.WorkspaceID]
		if !ok {
			var err error
			if list, err = activeWebhooks(ctx, tx, m.WorkspaceID); err != nil {
				return false, err
			}
			hooks[m.WorkspaceID] = list
		}
		for _, w := range list {
			if !w.Subscribes(m.Event) {
				continue
			}
			if insert == nil {
				var err error
				if insert, err = tx.PrepareContext(ctx, `INSERT INTO webhook_deliveries (id, webhook_id, workspace_id,
					message_id, event, payload, status, created_at, next_attempt_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
					ON CONFLICT (webhook_id, message_id) DO NOTHING`); err != nil {
					return false, err
				}
			}
			if _, err := insert.ExecContext(ctx, id.New(id.Delivery), w.ID, w.WorkspaceID, m.ID, m.Event,
				string(m.Payload), string(webhook.StatusPending), now, now); err != nil {
				return false, fmt.Errorf("enqueue %s message: %w", m.Event, err)
			}
			wrote = true
		}
	}
	return wrote, nil
}

func activeWebhooks(ctx context.Context, tx *sql.Tx, workspaceID string) ([]*webhook.Webhook, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+webhookColumns+` FROM webhooks
		WHERE workspace_id = $1 AND is_active = TRUE`, workspaceID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*webhook.Webhook
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// notifyEnqueued tells the OnEnqueue function that deliveries were stored.
func (s *Store) notifyEnqueued() {
	if f := s.onEnqueue.Load(); f != nil {
		(*f)()
	}
}

// OnEnqueue sets the function called after a transaction stored deliveries,
// so that a dispatcher in this process can start on them at once.
func (s *Store) OnEnqueue(f func()) { s.onEnqueue.Store(&f) }

// ClaimDue implements webhook.Store.
func (s *Store) ClaimDue(ctx context.Context, owner string, now, leaseUntil time.Time, n int) ([]webhook.Claimed, error) {
	return s.ClaimFair(ctx, owner, now, leaseUntil, n, math.MaxInt32, math.MaxInt32)
}

// claimLine lists the deliveries that may be claimed, in claim order.
//
// Each due delivery has two places. Its place in its webhook's line is its
// rank there (by due time) plus the webhook's deliveries in flight (leased,
// lease unexpired); a place beyond the webhook's cap ($2, or 1 for a probe
// after its breaker's cool-down) is not listed, and paused and disabled
// webhooks have no line. Its place in its workspace's line is its rank
// among the workspace's listed deliveries (by webhook place, then due time:
// the first of every webhook of the workspace, then the second, …) plus
// the workspace's deliveries in flight; a place beyond the workspace's cap
// ($4) is not listed, and a workspace at its cap is not read at all.
// Ordering by workspace place, then webhook place, takes the first of
// every workspace before the second of any, so that a workspace with many
// webhooks gets no more turns than one with a single webhook, and a
// workspace or webhook with attempts in flight waits behind those without.
//
// The query starts from the webhooks and reads at most the cap of each
// line's head through webhook_deliveries_line, so its cost follows the
// number of webhooks, not the backlog: a window over every due delivery
// took 1.2 s with 200,000 of them on PostgreSQL (docs/benchmarks.md); the
// workspace's window runs over those heads only.
// PostgreSQL reads each head with a LATERAL join; SQLite, which has none,
// with a correlated IN, run once per webhook: CROSS JOIN holds SQLite's
// planner to that order (left to choose, it scanned the deliveries and ran
// the subquery for each: 420 ms per claim with 1,000 deliveries, all of it
// holding the write lock, where it now takes 2 ms).
const (
	claimHooks = `WITH busy AS (
		SELECT webhook_id, workspace_id, COUNT(*) AS n FROM webhook_deliveries
		WHERE lease_until IS NOT NULL AND lease_until >= $1 AND status = 'pending' GROUP BY webhook_id, workspace_id),
	wsbusy AS (
		SELECT workspace_id, CAST(SUM(n) AS BIGINT) AS n FROM busy GROUP BY workspace_id),
	hooks AS (
		SELECT w.id, w.workspace_id, COALESCE(b.n, 0) AS busy, COALESCE(s.n, 0) AS wsbusy,
			CASE WHEN w.paused_until IS NULL THEN $2 ELSE 1 END AS cap
		FROM webhooks w LEFT JOIN busy b ON b.webhook_id = w.id LEFT JOIN wsbusy s ON s.workspace_id = w.workspace_id
		WHERE w.is_active = TRUE AND (w.paused_until IS NULL OR w.paused_until <= $1) AND COALESCE(s.n, 0) < $4),`
	claimRanked = `
	ranked AS (
		SELECT id, webhook_id, workspace_id, next_attempt_at, place,
			ROW_NUMBER() OVER (PARTITION BY workspace_id ORDER BY place, next_attempt_at, id) + wsbusy AS wsplace
		FROM line WHERE place <= cap)
	SELECT id, webhook_id, workspace_id FROM ranked WHERE wsplace <= $4
	ORDER BY wsplace, place, next_attempt_at, id LIMIT $3`
	claimLinePostgres = claimHooks + `
	line AS (
		SELECT c.id, c.webhook_id, h.workspace_id, c.next_attempt_at, c.rank + h.busy AS place, h.cap, h.wsbusy
		FROM hooks h CROSS JOIN LATERAL (
			SELECT x.id, x.webhook_id, x.next_attempt_at, ROW_NUMBER() OVER (ORDER BY x.next_attempt_at, x.id) AS rank
			FROM webhook_deliveries x WHERE x.webhook_id = h.id AND x.status = 'pending' AND x.next_attempt_at <= $1
				AND (x.lease_until IS NULL OR x.lease_until < $1)
			ORDER BY x.next_attempt_at, x.id LIMIT $2) c
		WHERE h.busy < h.cap),` + claimRanked
	claimLineSQLite = claimHooks + `
	line AS (
		SELECT d.id, d.webhook_id, h.workspace_id, d.next_attempt_at,
			ROW_NUMBER() OVER (PARTITION BY d.webhook_id ORDER BY d.next_attempt_at, d.id) + h.busy AS place, h.cap, h.wsbusy
		FROM hooks h CROSS JOIN webhook_deliveries d ON d.id IN (
			SELECT x.id FROM webhook_deliveries x WHERE x.webhook_id = h.id AND x.status = 'pending'
				AND x.next_attempt_at <= $1 AND (x.lease_until IS NULL OR x.lease_until < $1)
			ORDER BY x.next_attempt_at, x.id LIMIT $2)
		WHERE h.busy < h.cap),` + claimRanked
)

// workspaceClaimLock is the first key of the PostgreSQL advisory locks
// (pg_advisory_xact_lock(int, int)) by which claimers take turns on a
// workspace; the second is a hash of its id. The two-key locks are apart
// from the one-key lock of the migrations.
const workspaceClaimLock = 8413

// ClaimFair implements webhook.Store. The line is read first; then the
// workspaces in it are locked (PostgreSQL: an advisory lock each, taken in
// key order), then the rows of the webhooks in it (FOR NO KEY UPDATE, the
// lock RecordAttempt takes, in id order), so that claimers never deadlock;
// the workspaces' and webhooks' deliveries in flight are counted again
// under the locks, and the deliveries leased in line order while their
// webhook and their workspace have room: two claimers cannot both take a
// webhook's or a workspace's last slot. A claimer waits for another's
// claim of the same workspace or webhook (milliseconds) rather than skip
// it, so an empty answer means nothing is due, never "busy elsewhere"; the
// deliveries' rows are taken with SKIP LOCKED and checked again, so a row
// another took since the line was read is passed over. SQLite's
// transactions take the database's write lock, so claimers take turns.
// The advisory locks touch nothing else: link writes, which lock the
// workspace's row, do not wait for claimers.
func (s *Store) ClaimFair(ctx context.Context, owner string, now, leaseUntil time.Time, n, perWebhook, perWorkspace int) ([]webhook.Claimed, error) {
	if n <= 0 {
		return nil, nil
	}
	perWebhook = max(perWebhook, 1)
	perWorkspace = max(perWorkspace, 1)
	var out []webhook.Claimed
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		out = nil
		type candidate struct{ id, webhookID, workspaceID string }
		var candidates []candidate
		query := claimLineSQLite
		if s.dialect == postgres {
			query = claimLinePostgres
		}
		rows, err := tx.QueryContext(ctx, query, micros(now), perWebhook, n, perWorkspace)
		if err != nil {
			return err
		}
		for rows.Next() {
			var c candidate
			if err := rows.Scan(&c.id, &c.webhookID, &c.workspaceID); err != nil {
				rows.Close()
				return err
			}
			candidates = append(candidates, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(candidates) == 0 {
			return nil
		}
		var ids, workspaces []string
		seen := map[string]bool{}
		for _, c := range candidates {
			if !seen[c.webhookID] {
				seen[c.webhookID] = true
				ids = append(ids, c.webhookID)
			}
			if !seen[c.workspaceID] {
				seen[c.workspaceID] = true
				workspaces = append(workspaces, c.workspaceID)
			}
		}
		// Lock the workspaces, then the webhooks, and read their state
		// again under the locks.
		if s.dialect == postgres {
			if err := lockClaimWorkspaces(ctx, tx, workspaces); err != nil {
				return err
			}
		}
		lock := ""
		if s.dialect == postgres {
			lock = " ORDER BY id FOR NO KEY UPDATE"
		}
		marks, args := inList(ids)
		hooks := map[string]*webhook.Webhook{}
		room := map[string]int{}
		rows, err = tx.QueryContext(ctx, `SELECT `+webhookColumns+`, paused_until FROM webhooks
			WHERE id IN (`+marks+`)`+lock, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var paused sql.NullInt64
			w, err := scanWebhookWith(rows, &paused)
			if err != nil {
				rows.Close()
				return err
			}
			switch {
			case !w.IsActive || (paused.Valid && paused.Int64 > micros(now)):
				continue
			case paused.Valid:
				room[w.ID] = 1 // the probe
			default:
				room[w.ID] = perWebhook
			}
			hooks[w.ID] = w
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(hooks) == 0 {
			return nil
		}
		ids = ids[:0]
		for id := range hooks {
			ids = append(ids, id)
		}
		if err := subtractInFlight(ctx, tx, "webhook_id", ids, now, room); err != nil {
			return err
		}
		wsRoom := map[string]int{}
		for _, ws := range workspaces {
			wsRoom[ws] = perWorkspace
		}
		if err := subtractInFlight(ctx, tx, "workspace_id", workspaces, now, wsRoom); err != nil {
			return err
		}
		rowLock := ""
		if s.dialect == postgres {
			rowLock = " FOR UPDATE SKIP LOCKED"
		}
		for _, c := range candidates {
			w := hooks[c.webhookID]
			if w == nil || room[c.webhookID] <= 0 || wsRoom[c.workspaceID] <= 0 {
				continue
			}
			// Leased only if nobody took it between the line's read and the lock.
			d, err := scanDelivery(tx.QueryRowContext(ctx, `UPDATE webhook_deliveries SET lease_owner = $2, lease_until = $3
				WHERE id = (SELECT id FROM webhook_deliveries WHERE id = $1 AND status = 'pending'
					AND (lease_until IS NULL OR lease_until < $4)`+rowLock+`)
				RETURNING `+deliveryColumns, c.id, owner, micros(leaseUntil), micros(now)))
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			room[c.webhookID]--
			wsRoom[c.workspaceID]--
			out = append(out, webhook.Claimed{Delivery: d, Webhook: w})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	return out, nil
}

// lockClaimWorkspaces takes, within tx, the PostgreSQL advisory lock of
// each workspace (workspaceClaimLock): claimers of two workspaces whose
// keys collide only take turns.
func lockClaimWorkspaces(ctx context.Context, tx *sql.Tx, workspaces []string) error {
	if err := lockKeys(ctx, tx, workspaceClaimLock, workspaces); err != nil {
		return fmt.Errorf("lock the workspaces: %w", err)
	}
	return nil
}

// lockKeys takes, within tx, the PostgreSQL advisory transaction lock of
// class and each of names (its FNV-1a hash as the lock's key), in key
// order, so that two transactions locking overlapping names never wait for
// each other's (a VALUES list is read in its order, so the locks are taken
// in it).
func lockKeys(ctx context.Context, tx *sql.Tx, class int, names []string) error {
	if len(names) == 0 {
		return nil
	}
	keys := make([]int32, 0, len(names))
	seen := map[int32]bool{}
	for _, name := range names {
		h := fnv.New32a()
		h.Write([]byte(name))
		k := int32(h.Sum32())
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	values := make([]string, len(keys))
	args := make([]any, len(keys))
	for i, k := range keys {
		values[i] = "($" + strconv.Itoa(i+1) + "::int)"
		args[i] = k
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(`+strconv.Itoa(class)+`, k)
		FROM (VALUES `+strings.Join(values, ", ")+`) AS v(k)`, args...)
	return err
}

// subtractInFlight takes from room[key] the pending deliveries leased and
// unexpired at now whose column (webhook_id or workspace_id) is key, for
// each of keys.
func subtractInFlight(ctx context.Context, tx *sql.Tx, column string, keys []string, now time.Time, room map[string]int) error {
	if len(keys) == 0 {
		return nil
	}
	marks, args := inList(keys)
	rows, err := tx.QueryContext(ctx, `SELECT `+column+`, COUNT(*) FROM webhook_deliveries
		WHERE lease_until IS NOT NULL AND lease_until >= $`+strconv.Itoa(len(args)+1)+` AND status = 'pending'
		AND `+column+` IN (`+marks+`) GROUP BY `+column, append(args, micros(now))...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var busy int
		if err := rows.Scan(&key, &busy); err != nil {
			return err
		}
		room[key] -= busy
	}
	return rows.Err()
}

// RecordAttempt implements webhook.Store.
func (s *Store) RecordAttempt(ctx context.Context, owner, deliveryID string, a webhook.Attempt) (webhook.Recorded, error) {
	status := webhook.StatusPending
	switch {
	case a.OK:
		status = webhook.StatusSuccess
	case a.Next == nil:
		status = webhook.StatusFailed
	}
	var next sql.NullInt64
	if status == webhook.StatusPending {
		next = nullMicros(a.Next)
	}
	var errText, body sql.NullString
	if a.Error != "" {
		errText = sql.NullString{String: a.Error, Valid: true}
	}
	body = sql.NullString{String: a.ResponseBody, Valid: a.ResponseStatus != nil}
	var respStatus sql.NullInt64
	if a.ResponseStatus != nil {
		respStatus = sql.NullInt64{Int64: int64(*a.ResponseStatus), Valid: true}
	}
	var rec webhook.Recorded
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		rec = webhook.Recorded{}
		var webhookID string
		err := tx.QueryRowContext(ctx, `SELECT webhook_id, workspace_id FROM webhook_deliveries WHERE id = $1`,
			deliveryID).Scan(&webhookID, &rec.WorkspaceID)
		rec.WebhookID = webhookID
		if errors.Is(err, sql.ErrNoRows) {
			return webhook.ErrLeaseLost
		}
		if err != nil {
			return fmt.Errorf("record attempt: %w", err)
		}
		// Lock order: the webhook's row, then its deliveries' rows. The
		// attempt that disables the webhook fails every pending delivery of
		// it; had another attempt locked its own delivery first and then
		// waited for the webhook, PostgreSQL would find a deadlock.
		// (SQLite's transactions take the database's write lock at their start.)
		// FOR NO KEY UPDATE, the lock the counter's UPDATE takes anyway: unlike
		// FOR UPDATE it lets the foreign-key checks of deliveries being
		// enqueued for this webhook (FOR KEY SHARE) proceed, which would
		// otherwise deadlock with link creation.
		if s.dialect == postgres {
			if _, err := tx.ExecContext(ctx, `SELECT id FROM webhooks WHERE id = $1 FOR NO KEY UPDATE`, webhookID); err != nil {
				return fmt.Errorf("record attempt: %w", err)
			}
		}
		res, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET status = $2, attempts = attempts + 1,
			response_status = $3, response_time_ms = $4, response_body = $5, error = $6, last_attempt_at = $7,
			next_attempt_at = $8, lease_owner = NULL, lease_until = NULL
			WHERE id = $1 AND lease_owner = $9 AND status = 'pending'`,
			deliveryID, string(status), respStatus, a.ResponseTimeMs, body, errText, micros(a.At), next, owner)
		if err != nil {
			return fmt.Errorf("record attempt: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("record attempt: %w", err)
		} else if n == 0 {
			return webhook.ErrLeaseLost
		}
		if rec.PausedUntil, err = recordBreaker(ctx, tx, webhookID, a); err != nil {
			return fmt.Errorf("record attempt: %w", err)
		}
		if a.OK {
			_, err := tx.ExecContext(ctx, `UPDATE webhooks SET consecutive_failures = 0 WHERE id = $1`, webhookID)
			return err
		}
		var failures int
		if err := tx.QueryRowContext(ctx, `UPDATE webhooks SET consecutive_failures = consecutive_failures + 1
			WHERE id = $1 RETURNING consecutive_failures`, webhookID).Scan(&failures); err != nil {
			return fmt.Errorf("count webhook failures: %w", err)
		}
		if failures < webhook.MaxConsecutiveFailures {
			return nil
		}
		// updated_at moves too: an edit that read the webhook active reads it again.
		if _, err := tx.ExecContext(ctx, `UPDATE webhooks SET is_active = FALSE,
			updated_at = CASE WHEN updated_at >= $2 THEN updated_at + 1 ELSE $2 END WHERE id = $1`,
			webhookID, micros(a.At)); err != nil {
			return err
		}
		if err := bumpWebhookGeneration(ctx, tx); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL,
			lease_owner = NULL, lease_until = NULL,
			error = COALESCE(error || '; ', '') || 'not retried: the webhook was disabled after 10 consecutive failures'
			WHERE webhook_id = $1 AND status = 'pending'`, webhookID)
		rec.Disabled = err == nil
		return err
	})
	if err != nil {
		return webhook.Recorded{}, err
	}
	return rec, nil
}

// recordBreaker moves, within tx and under the webhook's lock, its circuit
// breaker with the attempt's outcome (webhook.Breaker): an answer closes
// it; an unreachable attempt counts, and opens it at the threshold or when
// it was the probe after a cool-down; an attempt that started before the
// breaker opened (another in flight then) leaves it as it is.
func recordBreaker(ctx context.Context, tx *sql.Tx, webhookID string, a webhook.Attempt) (opened *time.Time, err error) {
	var unreachable, opens int
	var paused sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT unreachable_attempts, breaker_opens, paused_until FROM webhooks WHERE id = $1`,
		webhookID).Scan(&unreachable, &opens, &paused); err != nil {
		return nil, err
	}
	b, at := a.Breaker, micros(a.At)
	switch {
	case !a.Unreachable:
		if unreachable == 0 && opens == 0 && !paused.Valid {
			return nil, nil
		}
		unreachable, opens, paused = 0, 0, sql.NullInt64{}
	case paused.Valid && paused.Int64 > at:
		return nil, nil
	case b.Threshold > 0 && (paused.Valid || unreachable+1 >= b.Threshold):
		opens++
		unreachable = 0
		// The cool-down runs from the attempt's end, not its start.
		end := a.At.Add(time.Duration(a.ResponseTimeMs) * time.Millisecond)
		until := end.Add(b.CooldownAfter(opens))
		paused, opened = sql.NullInt64{Int64: micros(until), Valid: true}, &until
	default:
		unreachable++
	}
	_, err = tx.ExecContext(ctx, `UPDATE webhooks SET unreachable_attempts = $2, breaker_opens = $3, paused_until = $4
		WHERE id = $1`, webhookID, unreachable, opens, paused)
	return opened, err
}

func scanWebhook(row scanner) (*webhook.Webhook, error) { return scanWebhookWith(row) }

// scanWebhookWith scans webhookColumns and then the extra columns into extra.
func scanWebhookWith(row scanner, extra ...any) (*webhook.Webhook, error) {
	var (
		w                    webhook.Webhook
		events               string
		createdAt, updatedAt int64
	)
	if err := row.Scan(append([]any{&w.ID, &w.WorkspaceID, &w.Name, &w.URL, &events, &w.Secret, &w.IsActive,
		&w.ConsecutiveFailures, &createdAt, &updatedAt}, extra...)...); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(events), &w.Events); err != nil {
		return nil, fmt.Errorf("webhook %s events: %w", w.ID, err)
	}
	w.CreatedAt, w.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return &w, nil
}

func scanDelivery(row scanner) (*webhook.Delivery, error) {
	var (
		d                        webhook.Delivery
		payload, status          string
		respStatus, respMs       sql.NullInt64
		body, errText            sql.NullString
		createdAt                int64
		lastAttempt, nextAttempt sql.NullInt64
	)
	if err := row.Scan(&d.ID, &d.WebhookID, &d.WorkspaceID, &d.MessageID, &d.Event, &payload, &status, &d.Attempts,
		&respStatus, &respMs, &body, &errText, &createdAt, &lastAttempt, &nextAttempt); err != nil {
		return nil, err
	}
	d.Payload, d.Status = []byte(payload), webhook.Status(status)
	d.ResponseStatus, d.ResponseTimeMs = intPtr(respStatus), intPtr(respMs)
	d.ResponseBody, d.Error = stringPtr(body), stringPtr(errText)
	d.CreatedAt, d.LastAttemptAt, d.NextAttemptAt = fromMicros(createdAt), timePtr(lastAttempt), timePtr(nextAttempt)
	return &d, nil
}

func intPtr(v sql.NullInt64) *int {
	if !v.Valid {
		return nil
	}
	n := int(v.Int64)
	return &n
}
