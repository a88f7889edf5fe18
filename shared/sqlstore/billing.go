package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/workspace"
)

var _ workspace.BillingStore = (*Store)(nil)

const checkoutColumns = `id, workspace_id, price_id, plan, success_url, cancel_url, status, created_at, expires_at, completed_at`

// CreateCheckoutSession implements workspace.BillingStore.
func (s *Store) CreateCheckoutSession(ctx context.Context, c *workspace.CheckoutSession) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO checkout_sessions (`+checkoutColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		c.ID, c.WorkspaceID, c.PriceID, string(c.Plan), c.SuccessURL, c.CancelURL, string(c.Status),
		micros(c.CreatedAt), micros(c.ExpiresAt), nullMicros(c.CompletedAt))
	if err != nil {
		return fmt.Errorf("create checkout session: %w", err)
	}
	return nil
}

// GetCheckoutSession implements workspace.BillingStore.
func (s *Store) GetCheckoutSession(ctx context.Context, id string) (*workspace.CheckoutSession, error) {
	return getCheckoutSession(ctx, s.db, id)
}

// queryer is what a *sql.DB and a *sql.Tx share.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func getCheckoutSession(ctx context.Context, q queryer, id string) (*workspace.CheckoutSession, error) {
	var (
		c                workspace.CheckoutSession
		plan, status     string
		created, expires int64
		completed        sql.NullInt64
	)
	err := q.QueryRowContext(ctx, `SELECT `+checkoutColumns+` FROM checkout_sessions WHERE id = $1`, id).Scan(
		&c.ID, &c.WorkspaceID, &c.PriceID, &plan, &c.SuccessURL, &c.CancelURL, &status, &created, &expires, &completed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.NotFoundf("checkout session")
	}
	if err != nil {
		return nil, fmt.Errorf("get checkout session: %w", err)
	}
	c.Plan, c.Status = workspace.Plan(plan), workspace.CheckoutStatus(status)
	c.CreatedAt, c.ExpiresAt, c.CompletedAt = fromMicros(created), fromMicros(expires), timePtr(completed)
	return &c, nil
}

// CompleteCheckoutSession implements workspace.BillingStore.
func (s *Store) CompleteCheckoutSession(ctx context.Context, id string, at time.Time) (*workspace.CheckoutSession, bool, error) {
	var (
		out       *workspace.CheckoutSession
		completed bool
	)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		// Of two payments at once, one updates the row; the other, waiting for
		// its lock (PostgreSQL) or for the write lock (SQLite), finds it complete.
		var wsID, plan string
		err := tx.QueryRowContext(ctx, `UPDATE checkout_sessions SET status = $2, completed_at = $3
			WHERE id = $1 AND status = $4 AND expires_at > $3 RETURNING workspace_id, plan`,
			id, string(workspace.CheckoutComplete), micros(at), string(workspace.CheckoutOpen)).Scan(&wsID, &plan)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			c, err := getCheckoutSession(ctx, tx, id)
			if err != nil {
				return err
			}
			if c.Status == workspace.CheckoutOpen {
				return workspace.ErrCheckoutExpired
			}
			out = c
			return nil
		case err != nil:
			return fmt.Errorf("complete checkout session: %w", err)
		}
		if err := s.changePlan(ctx, tx, wsID, plan, "", audit.Actor{Type: audit.ActorSystem, ID: "checkout",
			Name: "checkout " + id}); err != nil {
			return fmt.Errorf("complete checkout session: %w", err)
		}
		if out, err = getCheckoutSession(ctx, tx, id); err != nil {
			return err
		}
		completed = true
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, completed, nil
}

// lockWorkspaceRow checks, within tx, that the workspace exists (else
// NOT_FOUND) and on PostgreSQL locks its row, so that the subscription
// changes of one workspace happen one after the other. SQLite's transactions
// hold the database's write lock already.
func (s *Store) lockWorkspaceRow(ctx context.Context, tx *sql.Tx, workspaceID string) error {
	q := `SELECT id FROM workspaces WHERE id = $1`
	if s.dialect == postgres {
		q += ` FOR UPDATE`
	}
	var got string
	err := tx.QueryRowContext(ctx, q, workspaceID).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return fault.NotFoundf("workspace")
	}
	return err
}

// StartSubscription implements workspace.BillingStore.
func (s *Store) StartSubscription(ctx context.Context, sub *workspace.Subscription) (bool, error) {
	applied := false
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.lockWorkspaceRow(ctx, tx, sub.WorkspaceID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO subscriptions
			(id, workspace_id, customer_id, price_id, plan, active, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, TRUE, $6, $7) ON CONFLICT (id) DO NOTHING`,
			sub.ID, sub.WorkspaceID, sub.CustomerID, sub.PriceID, string(sub.Plan), micros(sub.CreatedAt), micros(sub.UpdatedAt)); err != nil {
			return fmt.Errorf("start subscription: %w", err)
		}
		// A repeated start (Stripe delivers events at least once) refreshes the
		// record; an ended subscription stays ended.
		res, err := tx.ExecContext(ctx, `UPDATE subscriptions SET customer_id = $3, price_id = $4, plan = $5, updated_at = $6
			WHERE id = $1 AND workspace_id = $2 AND active = TRUE`,
			sub.ID, sub.WorkspaceID, sub.CustomerID, sub.PriceID, string(sub.Plan), micros(sub.UpdatedAt))
		if err != nil {
			return fmt.Errorf("start subscription: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		if err := s.changePlan(ctx, tx, sub.WorkspaceID, string(sub.Plan), "", audit.Actor{Type: audit.ActorSystem,
			ID: "stripe", Name: "Stripe subscription " + sub.ID}); err != nil {
			return fmt.Errorf("start subscription: %w", err)
		}
		applied = true
		return nil
	})
	return applied, err
}

// EndSubscription implements workspace.BillingStore.
func (s *Store) EndSubscription(ctx context.Context, id string, at time.Time) (*workspace.Subscription, workspace.Plan, bool, error) {
	var (
		sub   *workspace.Subscription
		after workspace.Plan
	)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var wsID string
		err := tx.QueryRowContext(ctx, `SELECT workspace_id FROM subscriptions WHERE id = $1`, id).Scan(&wsID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("end subscription: %w", err)
		}
		if err := s.lockWorkspaceRow(ctx, tx, wsID); err != nil {
			return err
		}
		var (
			got              workspace.Subscription
			plan             string
			created, updated int64
		)
		err = tx.QueryRowContext(ctx, `UPDATE subscriptions SET active = FALSE, updated_at = $2
			WHERE id = $1 AND active = TRUE
			RETURNING id, workspace_id, customer_id, price_id, plan, created_at, updated_at`, id, micros(at)).Scan(
			&got.ID, &got.WorkspaceID, &got.CustomerID, &got.PriceID, &plan, &created, &updated)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // ended already
		}
		if err != nil {
			return fmt.Errorf("end subscription: %w", err)
		}
		got.Plan, got.CreatedAt, got.UpdatedAt = workspace.Plan(plan), fromMicros(created), fromMicros(updated)

		next := string(workspace.Free)
		err = tx.QueryRowContext(ctx, `SELECT plan FROM subscriptions WHERE workspace_id = $1 AND active = TRUE
			ORDER BY created_at DESC, id DESC LIMIT 1`, got.WorkspaceID).Scan(&next)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("end subscription: %w", err)
		}
		// A plan set since (by another checkout or an administrator) stays.
		if err := s.changePlan(ctx, tx, got.WorkspaceID, next, plan, audit.Actor{Type: audit.ActorSystem,
			ID: "stripe", Name: "Stripe subscription " + got.ID + " ended"}); err != nil {
			return fmt.Errorf("end subscription: %w", err)
		}
		if err := tx.QueryRowContext(ctx, `SELECT plan FROM workspaces WHERE id = $1`, got.WorkspaceID).Scan(&plan); err != nil {
			return fmt.Errorf("end subscription: %w", err)
		}
		got.Active = false
		sub, after = &got, workspace.Plan(plan)
		return nil
	})
	if err != nil {
		return nil, "", false, err
	}
	return sub, after, sub != nil, nil
}

// changePlan sets, within tx, the workspace's plan to plan (only while it
// is onlyFrom, when that is set) and records the change in the audit log
// by actor, in the same transaction. NOT_FOUND for no such workspace.
func (s *Store) changePlan(ctx context.Context, tx *sql.Tx, workspaceID, plan, onlyFrom string, actor audit.Actor) error {
	var old string
	err := tx.QueryRowContext(ctx, `SELECT plan FROM workspaces WHERE id = $1`, workspaceID).Scan(&old)
	if errors.Is(err, sql.ErrNoRows) {
		return fault.NotFoundf("workspace")
	}
	if err != nil {
		return err
	}
	if old == plan || (onlyFrom != "" && old != onlyFrom) {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE workspaces SET plan = $1 WHERE id = $2`, plan, workspaceID); err != nil {
		return err
	}
	e, err := audit.Of(workspaceID, "workspace.plan_changed", "workspace", workspaceID,
		map[string]string{"plan": old}, map[string]string{"plan": plan})
	if err != nil {
		return err
	}
	e.Actor = actor
	return s.writeAudit(ctx, tx, []audit.Entry{e})
}
