package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/id"
)

var _ audit.Store = (*Store)(nil)

const auditColumns = `id, workspace_id, actor_type, actor_id, actor_name, action, resource_type,
	resource_id, changes, ip, user_agent, created_at`

// writeAudit records, within tx, the audit entries ctx carries (audit.With),
// by the actor and from the address of the request ctx carries
// (audit.WithRequest), or by the system when it carries none. Every store
// write that ends in inTx calls it, so that a change and its entry commit
func (s *Store) writeAudit(ctx context.Context, tx *sql.Tx, entries []audit.Entry) error {
	req, _ := audit.RequestOf(ctx)
	if req.Actor.Type == "" {
		req.Actor = audit.System
	}
	now := s.Now().UTC()
	for _, e := range entries {
		if e.Actor.Type == "" {
			e.Actor = req.Actor
		}
		if e.IP == "" && e.UserAgent == "" {
			e.IP, e.UserAgent = req.IP, req.UserAgent
		}
		if e.Changes == nil {
			e.Changes = map[string]audit.Change{}
		}
		changes, err := json.Marshal(e.Changes)
		if err != nil {
			return fmt.Errorf("audit %s: %w", e.Action, err)
		}
		// An entry is never older than the workspace's latest, so that the
		// log's order (newest first) is the order of the writes, also for
		// those of one microsecond or one transaction.
		at := micros(now)
		var last sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(created_at) FROM audit_log WHERE workspace_id = $1`,
			e.WorkspaceID).Scan(&last); err != nil {
			return fmt.Errorf("audit %s: %w", e.Action, err)
		}
		if last.Valid && at <= last.Int64 {
			at = last.Int64 + 1
		}
		entryID := fmt.Sprintf("%s%014x%s", id.Audit, at, id.Base62(10))
		if _, err := tx.ExecContext(ctx, `INSERT INTO audit_log (`+auditColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			entryID, e.WorkspaceID, string(e.Actor.Type), e.Actor.ID, e.Actor.Name, e.Action, e.ResourceType,
			e.ResourceID, string(changes), e.IP, e.UserAgent, at); err != nil {
			return fmt.Errorf("audit %s: %w", e.Action, err)
		}
	}
	return nil
}

// auditWhere returns the condition and arguments of f.
func auditWhere(f audit.Filter) (string, []any) {
	where := []string{"workspace_id = $1"}
	args := []any{f.WorkspaceID}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.ActorID != "" {
		where = append(where, "actor_id = "+arg(f.ActorID))
	}
	if f.ResourceType != "" {
		where = append(where, "resource_type = "+arg(f.ResourceType))
	}
	if f.ResourceID != "" {
		where = append(where, "resource_id = "+arg(f.ResourceID))
	}
	if f.Action != "" {
		where = append(where, "action = "+arg(f.Action))
	}
	if f.From != nil {
		where = append(where, "created_at >= "+arg(micros(*f.From)))
	}
	if f.To != nil {
		where = append(where, "created_at < "+arg(micros(*f.To)))
	}
	return strings.Join(where, " AND "), args
}

// ListAudit implements audit.Store.
func (s *Store) ListAudit(ctx context.Context, f audit.Filter) ([]*audit.Entry, int, error) {
	cond, args := auditWhere(f)
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit_log WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count audit log: %w", err)
	}
	out := []*audit.Entry{}
	err := s.eachAudit(ctx, f, cond, args, func(e *audit.Entry) error {
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// EachAudit implements audit.Store: rows are decoded one at a time, so
// that an export of any size holds one entry in memory.
func (s *Store) EachAudit(ctx context.Context, f audit.Filter, fn func(*audit.Entry) error) error {
	cond, args := auditWhere(f)
	return s.eachAudit(ctx, f, cond, args, fn)
}

func (s *Store) eachAudit(ctx context.Context, f audit.Filter, cond string, args []any, fn func(*audit.Entry) error) error {
	q := `SELECT ` + auditColumns + ` FROM audit_log WHERE ` + cond + ` ORDER BY created_at DESC, id DESC`
	if f.Limit > 0 {
		q += ` LIMIT ` + strconv.Itoa(f.Limit) + ` OFFSET ` + strconv.Itoa(f.Offset)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("list audit log: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			e       audit.Entry
			actor   string
			changes string
			at      int64
		)
		if err := rows.Scan(&e.ID, &e.WorkspaceID, &actor, &e.Actor.ID, &e.Actor.Name, &e.Action,
			&e.ResourceType, &e.ResourceID, &changes, &e.IP, &e.UserAgent, &at); err != nil {
			return fmt.Errorf("list audit log: %w", err)
		}
		e.Actor.Type = audit.ActorType(actor)
		e.CreatedAt = fromMicros(at)
		if err := json.Unmarshal([]byte(changes), &e.Changes); err != nil {
			return fmt.Errorf("audit entry %s: changes: %w", e.ID, err)
		}
		if err := fn(&e); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list audit log: %w", err)
	}
	return nil
}

// pruneBatch is how many audit-log entries one statement of PruneAudit
// deletes, and prunePause the pause between two: a first prune of millions
// of entries holds SQLite's write lock (or PostgreSQL's row locks) for one
// batch at a time, and lets other writes in between. Tests lower them.
var (
	pruneBatch = 5000
	prunePause = 50 * time.Millisecond
)

// PruneAudit implements audit.Store. It deletes pruneBatch entries a
// statement, pausing prunePause between two, until none is left or ctx
// ends (it then returns ctx's error and what it deleted so far).
func (s *Store) PruneAudit(ctx context.Context, olderThan map[string]time.Time) (int64, error) {
	var n int64
	for plan, before := range olderThan {
		for {
			res, err := s.db.ExecContext(ctx, `DELETE FROM audit_log WHERE id IN
				(SELECT id FROM audit_log WHERE created_at < $1
				 AND workspace_id IN (SELECT id FROM workspaces WHERE plan = $2) LIMIT $3)`,
				micros(before), plan, pruneBatch)
			if err != nil {
				return n, fmt.Errorf("prune audit log: %w", err)
			}
			d, err := res.RowsAffected()
			if err != nil {
				return n, fmt.Errorf("prune audit log: %w", err)
			}
			n += d
			if d < int64(pruneBatch) {
				break
			}
			select {
			case <-ctx.Done():
				return n, ctx.Err()
			case <-time.After(prunePause):
			}
		}
	}
	return n, nil
}
