package sqlstore

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/importjob"
	"shortlink.dev/shared/link"
)

var _ importjob.Store = (*Store)(nil)

const importJobColumns = `id, workspace_id, source, file_name, file_size, on_conflict, mapping, status,
	total_rows, read_rows, created_links, skipped_rows, failed_rows, position, error, created_by, created_at, updated_at, finished_at`

// CreateImportJob implements importjob.Store. The audit entries ctx
// carries (import.created) are written with it.
func (s *Store) CreateImportJob(ctx context.Context, j *importjob.Job, file []byte) error {
	var mapping sql.NullString
	if j.Mapping != nil {
		b, err := json.Marshal(j.Mapping)
		if err != nil {
			return fmt.Errorf("create import job: %w", err)
		}
		mapping = sql.NullString{String: string(b), Valid: true}
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO import_jobs (`+importJobColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
			j.ID, j.WorkspaceID, j.Source, j.FileName, j.FileSize, j.OnConflict, mapping, string(j.Status),
			j.Total, j.Read, j.Created, j.Skipped, j.Failed, j.Position, nullString(nonEmpty(j.Error)), j.CreatedBy,
			micros(j.CreatedAt), micros(j.UpdatedAt), nullMicros(j.FinishedAt)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO import_files (job_id, data) VALUES ($1, $2)`,
			j.ID, base64.StdEncoding.EncodeToString(file))
		return err
	})
	return wrapWrite("create import job", err)
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// GetImportJob implements importjob.Store.
func (s *Store) GetImportJob(ctx context.Context, workspaceID, id string) (*importjob.Job, error) {
	j, err := scanImportJob(s.db.QueryRowContext(ctx, `SELECT `+importJobColumns+` FROM import_jobs
		WHERE id = $1 AND workspace_id = $2`, id, workspaceID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.NotFoundf("import job")
	}
	if err != nil {
		return nil, fmt.Errorf("get import job: %w", err)
	}
	return j, nil
}

// ListImportJobs implements importjob.Store.
func (s *Store) ListImportJobs(ctx context.Context, f importjob.Filter) ([]*importjob.Job, int, error) {
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM import_jobs WHERE workspace_id = $1`,
		f.WorkspaceID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count import jobs: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+importJobColumns+` FROM import_jobs WHERE workspace_id = $1
		ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, f.WorkspaceID, f.Limit, f.Offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list import jobs: %w", err)
	}
	defer rows.Close()
	out := []*importjob.Job{}
	for rows.Next() {
		j, err := scanImportJob(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list import jobs: %w", err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list import jobs: %w", err)
	}
	return out, total, nil
}

// CancelImportJob implements importjob.Store. The file goes with the job's
// end; the links it created stay.
func (s *Store) CancelImportJob(ctx context.Context, workspaceID, id string, at time.Time) (*importjob.Job, error) {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE import_jobs SET status = $3, updated_at = $4, finished_at = $4,
			lease_owner = NULL, lease_until = NULL
			WHERE id = $1 AND workspace_id = $2 AND status IN ('queued', 'running')`,
			id, workspaceID, string(importjob.Canceled), micros(at))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM import_files WHERE job_id = $1`, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cancel import job: %w", err)
	}
	return s.GetImportJob(ctx, workspaceID, id)
}

// ClaimImportJob implements importjob.Store: the UPDATE's condition is
// evaluated again on the row a concurrent claimer committed (PostgreSQL),
// or runs alone (SQLite), so one claimer wins. Jobs are taken fairly per
// workspace: first those of the workspace whose jobs were worked on least
// recently (the latest updated_at of its jobs that ever ran; none for a
// workspace whose jobs all wait), then the oldest, so that a workspace's
// job that yielded its turn (ReleaseImportJob) lets another workspace's go
// first.
func (s *Store) ClaimImportJob(ctx context.Context, owner string, now, leaseUntil time.Time) (*importjob.Job, []byte, error) {
	for tries := 0; tries < 5; tries++ {
		var id string
		err := s.db.QueryRowContext(ctx, `SELECT j.id FROM import_jobs j
			WHERE j.status = 'queued' OR (j.status = 'running' AND j.lease_until < $1)
			ORDER BY (SELECT COALESCE(MAX(o.updated_at), 0) FROM import_jobs o
				WHERE o.workspace_id = j.workspace_id AND o.status <> 'queued'), j.created_at, j.id
			LIMIT 1`, micros(now)).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("claim import job: %w", err)
		}
		res, err := s.db.ExecContext(ctx, `UPDATE import_jobs SET status = 'running', lease_owner = $2,
			lease_until = $3, updated_at = $4
			WHERE id = $1 AND (status = 'queued' OR (status = 'running' AND lease_until < $4))`,
			id, owner, micros(leaseUntil), micros(now))
		if err != nil {
			return nil, nil, fmt.Errorf("claim import job: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, nil, fmt.Errorf("claim import job: %w", err)
		} else if n == 0 {
			continue // another worker took it first
		}
		var ws, data string
		if err := s.db.QueryRowContext(ctx, `SELECT j.workspace_id, COALESCE(f.data, '') FROM import_jobs j
			LEFT JOIN import_files f ON f.job_id = j.id WHERE j.id = $1`, id).Scan(&ws, &data); err != nil {
			return nil, nil, fmt.Errorf("claim import job: %w", err)
		}
		j, err := s.GetImportJob(ctx, ws, id)
		if err != nil {
			return nil, nil, err
		}
		file, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, nil, fmt.Errorf("claim import job %s: file: %w", id, err)
		}
		return j, file, nil
	}
	return nil, nil, nil
}

// ImportJobWaiting implements importjob.Store.
func (s *Store) ImportJobWaiting(ctx context.Context, workspaceID string, now time.Time) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM import_jobs
		WHERE workspace_id <> $1 AND (status = 'queued' OR (status = 'running' AND lease_until < $2)) LIMIT 1) w`,
		workspaceID, micros(now)).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("import job waiting: %w", err)
	}
	return n > 0, nil
}

// holdJob moves the lease of the job owner holds on to until, within tx, or
// returns importjob.ErrLeaseLost.
func holdJob(ctx context.Context, tx *sql.Tx, id, owner string, set string, args ...any) error {
	q := `UPDATE import_jobs SET ` + set + ` WHERE id = $1 AND lease_owner = $2 AND status = 'running'`
	res, err := tx.ExecContext(ctx, q, append([]any{id, owner}, args...)...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != 1 {
		return importjob.ErrLeaseLost
	}
	return nil
}

// CommitImportBatch implements importjob.Store. Each created link's change
// goes in the change outbox with it, so that edges that cached the slug's
// absence learn of it.
func (s *Store) CommitImportBatch(ctx context.Context, b *importjob.Batch) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := holdJob(ctx, tx, b.JobID, b.Owner, `read_rows = read_rows + $3, created_links = created_links + $4,
			skipped_rows = skipped_rows + $5, failed_rows = failed_rows + $6, position = $7, lease_until = $8, updated_at = $9`,
			b.Read, b.Created, b.Skipped, b.Failed, b.Position, micros(b.LeaseUntil), micros(b.At)); err != nil {
			return err
		}
		active := 0
		ws := ""
		for _, l := range b.Links {
			if !l.IsArchived {
				active++
			}
			ws = l.WorkspaceID
		}
		if active > 0 && b.MaxActive >= 0 {
			if err := s.lockWorkspace(ctx, tx, ws); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM links WHERE workspace_id = $1 AND is_archived = FALSE`,
				ws).Scan(&n); err != nil {
				return err
			}
			if n+active > b.MaxActive {
				return fault.New(fault.LimitReached, "your plan allows %d active links", b.MaxActive)
			}
		}
		if err := s.checkImportDomains(ctx, tx, ws, b.Links, b.DefaultDomain); err != nil {
			return err
		}
		if err := s.insertLinks(ctx, tx, b.Links, micros(b.At)); err != nil {
			return err
		}
		report := make([][]any, len(b.Report))
		for i, r := range b.Report {
			report[i] = []any{b.JobID, r.Seq, r.Line, r.Outcome, r.Domain, r.Slug, r.Reason}
		}
		return s.insertRows(ctx, tx, `INSERT INTO import_report (job_id, seq, line, outcome, domain, slug, reason) VALUES `, report)
	})
	if errors.Is(err, importjob.ErrLeaseLost) || errors.Is(err, importjob.ErrDomainTaken) {
		return err
	}
	if err == nil && len(b.Links) > 0 {
		s.notifyChanged()
	}
	return linkWriteError("import batch", err)
}

// checkImportDomains returns importjob.ErrDomainTaken, within tx, when a
// custom domain of the links ls (of workspace ws; defaultDomain, which no
// workspace verifies, is not looked up) is verified by another workspace: links on it would hold slugs its owner will want. The names'
// locks (lockDomainNames, which MarkVerified takes too) order the batch
// and a verification of one of its names: either the verification comes
// first and the batch sees it, or the batch's links are written first and
// the verification moves them aside.
func (s *Store) checkImportDomains(ctx context.Context, tx *sql.Tx, ws string, ls []*link.Link, defaultDomain string) error {
	seen := map[string]bool{defaultDomain: true}
	var names []string
	for _, l := range ls {
		if !seen[l.Domain] {
			seen[l.Domain] = true
			names = append(names, l.Domain)
		}
	}
	if len(names) == 0 {
		return nil
	}
	if err := s.lockDomainNames(ctx, tx, names); err != nil {
		return err
	}
	marks, args := inList(names)
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM domains WHERE name IN (`+marks+`)
		AND verified = TRUE AND workspace_id <> $`+strconv.Itoa(len(args)+1), append(args, ws)...).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return importjob.ErrDomainTaken
	}
	return nil
}

// domainNameLock is the first key of the PostgreSQL advisory locks
// (pg_advisory_xact_lock(int, int)) of domain names, taken by import
// batches and by verifications; the second is a hash of the name.
const domainNameLock = 8415

// lockDomainNames takes, within tx, the PostgreSQL advisory lock of each
// of names (domainNameLock; lockKeys): keys that collide only make two
// names take turns. SQLite's transactions take the database's write lock:
// nothing to do.
func (s *Store) lockDomainNames(ctx context.Context, tx *sql.Tx, names []string) error {
	if s.dialect != postgres {
		return nil
	}
	if err := lockKeys(ctx, tx, domainNameLock, names); err != nil {
		return fmt.Errorf("lock the domain names: %w", err)
	}
	return nil
}

// insertLinks writes the new links ls within tx, as insertLink writes
// one, in multi-row statements, and a change each in the change outbox
// (edges may have cached their slugs' absence), stamped at. A new link is
// on no gallery page, so no page changes with it.
func (s *Store) insertLinks(ctx context.Context, tx *sql.Tx, ls []*link.Link, at int64) error {
	rows := make([][]any, 0, len(ls))
	var tags, changes [][]any
	// The changes' ids sit side by side in the outbox's index (id.Batch).
	change := id.Batch("chg_")
	for _, l := range ls {
		row, err := linkRow(l)
		if err != nil {
			return err
		}
		rows = append(rows, row)
		for _, t := range l.Tags {
			tags = append(tags, []any{l.ID, t})
		}
		changes = append(changes, []any{change(), "", l.ID, l.Domain, l.Slug, at})
	}
	if err := s.insertRows(ctx, tx, `INSERT INTO links (`+linkColumns+`, imported_clicks) VALUES `, rows); err != nil {
		return err
	}
	for _, l := range ls {
		if l.ClickLimit != nil {
			if err := s.syncClickLimit(ctx, tx, l.ID, l.ClickLimit); err != nil {
				return err
			}
		}
	}
	if err := s.insertRows(ctx, tx, `INSERT INTO link_tags (link_id, tag) VALUES `, tags); err != nil {
		return err
	}
	return s.insertRows(ctx, tx, `INSERT INTO change_outbox (id, kind, link_id, domain, slug, created_at) VALUES `, changes)
}

// maxInsertArgs bounds the arguments of one multi-row INSERT (SQLite
// allows 32766, PostgreSQL 65535).
const maxInsertArgs = 4000

// insertRows runs insert (ending in VALUES) over rows, as many rows a
// statement as maxInsertArgs allows. SQLite gets anonymous "?"
// parameters: it looks each "$N" up in a list, which costs a statement of
// thousands of them more than the writes; and its full-size statement is
// prepared once (stmts) rather than parsed again each batch, which cost
// about a tenth of an import's time (PostgreSQL's driver keeps its
// prepared statements itself).
func (s *Store) insertRows(ctx context.Context, tx *sql.Tx, insert string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	if s.dialect == postgres && len(rows) > 1 {
		return insertArrays(ctx, tx, strings.TrimSuffix(insert, "VALUES "), rows)
	}
	width := len(rows[0])
	per := max(maxInsertArgs/width, 1)
	for start := 0; start < len(rows); start += per {
		part := rows[start:min(start+per, len(rows))]
		var q strings.Builder
		q.WriteString(insert)
		args := make([]any, 0, len(part)*width)
		for i, r := range part {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteByte('(')
			for j := range r {
				if j > 0 {
					q.WriteString(", ")
				}
				if s.dialect == sqlite {
					q.WriteByte('?')
				} else {
					q.WriteString("$" + strconv.Itoa(len(args)+j+1))
				}
			}
			q.WriteByte(')')
			args = append(args, r...)
		}
		if s.dialect == sqlite && len(part) == per {
			stmt, err := s.stmts.get(ctx, s.db, q.String())
			if err != nil {
				return err
			}
			if _, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, args...); err != nil {
				return err
			}
			continue
		}
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// insertArrays runs, on PostgreSQL, insert (an INSERT naming its columns)
// over rows in one statement whatever their number: each column's values
// go as one array, the rows are the arrays unnested side by side. A
// statement of one text (the driver prepares it once) and one round trip
// a table for a whole import batch, where VALUES lists took several, each
// of its own text (PostgreSQL allows 65,535 parameters). A column's type
// is its values' Go type: string or sql.NullString (text), int64, int or
// sql.NullInt64 (bigint), bool (boolean).
func insertArrays(ctx context.Context, tx *sql.Tx, insert string, rows [][]any) error {
	width := len(rows[0])
	args := make([]any, width)
	var q strings.Builder
	q.WriteString(insert)
	q.WriteString(" SELECT * FROM unnest(")
	for j := range width {
		var (
			cast string
			err  error
		)
		switch rows[0][j].(type) {
		case string, sql.NullString:
			args[j], err = column(rows, j, "strings", textValue)
			cast = "text[]"
		case int64, int, sql.NullInt64:
			args[j], err = column(rows, j, "integers", bigintValue)
			cast = "bigint[]"
		case bool:
			args[j], err = column(rows, j, "booleans", booleanValue)
			cast = "boolean[]"
		default:
			return fmt.Errorf("insert arrays: column %d: %T", j, rows[0][j])
		}
		if err != nil {
			return err
		}
		if j > 0 {
			q.WriteString(", ")
		}
		q.WriteString("$" + strconv.Itoa(j+1) + "::" + cast)
	}
	q.WriteByte(')')
	_, err := tx.ExecContext(ctx, q.String(), args...)
	return err
}

// column returns column j of rows as the array insertArrays passes for
// it, each value through conv, or an error naming the column, kind (its
// values' kind, plural) and the type of the first value conv refuses.
func column[T any](rows [][]any, j int, kind string, conv func(any) (T, bool)) ([]T, error) {
	a := make([]T, len(rows))
	for i, r := range rows {
		v, ok := conv(r[j])
		if !ok {
			return nil, fmt.Errorf("insert arrays: column %d: %T among %s", j, r[j], kind)
		}
		a[i] = v
	}
	return a, nil
}

// textValue is v as an element of a text[] argument: nil for SQL NULL.
func textValue(v any) (*string, bool) {
	switch v := v.(type) {
	case string:
		return &v, true
	case sql.NullString:
		if !v.Valid {
			return nil, true
		}
		return &v.String, true
	}
	return nil, false
}

// bigintValue is v as an element of a bigint[] argument: nil for SQL NULL.
func bigintValue(v any) (*int64, bool) {
	switch v := v.(type) {
	case int64:
		return &v, true
	case int:
		n := int64(v)
		return &n, true
	case sql.NullInt64:
		if !v.Valid {
			return nil, true
		}
		return &v.Int64, true
	}
	return nil, false
}

// booleanValue is v as an element of a boolean[] argument.
func booleanValue(v any) (bool, bool) {
	b, ok := v.(bool)
	return b, ok
}

// stmtCache holds statements prepared on a database, by their text.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// get returns the statement of query, preparing it the first time.
func (c *stmtCache) get(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[query] = st
	return st, nil
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
}

// FinishImportJob implements importjob.Store. The audit entries ctx carries
// (import.finished) are written with it.
func (s *Store) FinishImportJob(ctx context.Context, id, owner string, status importjob.Status, why string, at time.Time) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := holdJob(ctx, tx, id, owner, `status = $3, error = $4, updated_at = $5, finished_at = $5,
			lease_owner = NULL, lease_until = NULL`, string(status), nullString(nonEmpty(why)), micros(at)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM import_files WHERE job_id = $1`, id)
		return err
	})
	if errors.Is(err, importjob.ErrLeaseLost) {
		return err
	}
	return wrapWrite("finish import job", err)
}

// ReleaseImportJob implements importjob.Store.
func (s *Store) ReleaseImportJob(ctx context.Context, id, owner string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE import_jobs SET lease_until = 0
		WHERE id = $1 AND lease_owner = $2 AND status = 'running'`, id, owner)
	if err != nil {
		return fmt.Errorf("release import job: %w", err)
	}
	return nil
}

// ImportReport implements importjob.Store.
func (s *Store) ImportReport(ctx context.Context, workspaceID, id string, fn func(importjob.ReportLine) error) error {
	if _, err := s.GetImportJob(ctx, workspaceID, id); err != nil {
		return err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT seq, line, outcome, domain, slug, reason FROM import_report
		WHERE job_id = $1 ORDER BY seq`, id)
	if err != nil {
		return fmt.Errorf("import report: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r importjob.ReportLine
		if err := rows.Scan(&r.Seq, &r.Line, &r.Outcome, &r.Domain, &r.Slug, &r.Reason); err != nil {
			return fmt.Errorf("import report: %w", err)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// ExistingLinks implements importjob.Store: on PostgreSQL a query per
// 1,000 keys, a join of the keys' arrays with links on the (domain, slug)
// unique index; on SQLite a query per domain and 500 slugs.
func (s *Store) ExistingLinks(ctx context.Context, keys []importjob.Key) (map[importjob.Key]importjob.Existing, error) {
	out := map[importjob.Key]importjob.Existing{}
	if s.dialect == postgres {
		for start := 0; start < len(keys); start += 1000 {
			part := keys[start:min(start+1000, len(keys))]
			domains, slugs := make([]string, len(part)), make([]string, len(part))
			for i, k := range part {
				domains[i], slugs[i] = k.Domain, k.Slug
			}
			// Both columns from the arrays: with the domain a constant
			// (l.domain = $1), PostgreSQL planned, while its statistics
			// still said the links were few (an import's own writes make
			// them many), a scan of every link of the domain for each
			// batch (36 ms a batch of 500 at 100,000 links); a join on
			// both columns is an index lookup a key (under 1 ms).
			rows, err := s.db.QueryContext(ctx, `SELECT l.domain, l.slug, l.workspace_id, l.destination_url
				FROM unnest($1::text[], $2::text[]) AS v(domain, slug)
				JOIN links l ON l.domain = v.domain AND l.slug = v.slug`, domains, slugs)
			if err != nil {
				return nil, fmt.Errorf("existing links: %w", err)
			}
			for rows.Next() {
				var k importjob.Key
				var e importjob.Existing
				if err := rows.Scan(&k.Domain, &k.Slug, &e.WorkspaceID, &e.DestinationURL); err != nil {
					rows.Close()
					return nil, fmt.Errorf("existing links: %w", err)
				}
				out[k] = e
			}
			if err := closeRows(rows); err != nil {
				return nil, fmt.Errorf("existing links: %w", err)
			}
		}
		return out, nil
	}
	byDomain := map[string][]string{}
	for _, k := range keys {
		byDomain[k.Domain] = append(byDomain[k.Domain], k.Slug)
	}
	for domain, slugs := range byDomain {
		for start := 0; start < len(slugs); start += 500 {
			marks, args := inList(slugs[start:min(start+500, len(slugs))])
			rows, err := s.db.QueryContext(ctx, `SELECT slug, workspace_id, destination_url FROM links
				WHERE domain = $`+strconv.Itoa(len(args)+1)+` AND slug IN (`+marks+`)`, append(args, domain)...)
			if err != nil {
				return nil, fmt.Errorf("existing links: %w", err)
			}
			for rows.Next() {
				k := importjob.Key{Domain: domain}
				var e importjob.Existing
				if err := rows.Scan(&k.Slug, &e.WorkspaceID, &e.DestinationURL); err != nil {
					rows.Close()
					return nil, fmt.Errorf("existing links: %w", err)
				}
				out[k] = e
			}
			if err := closeRows(rows); err != nil {
				return nil, fmt.Errorf("existing links: %w", err)
			}
		}
	}
	return out, nil
}

// LinksWithDestinations implements importjob.Store: a query per domain
// and 500 destinations.
func (s *Store) LinksWithDestinations(ctx context.Context, workspaceID string, keys []importjob.Key) (map[importjob.Key]bool, error) {
	out := map[importjob.Key]bool{}
	byDomain := map[string][]string{}
	for _, k := range keys {
		byDomain[k.Domain] = append(byDomain[k.Domain], k.Slug)
	}
	for domain, dests := range byDomain {
		for start := 0; start < len(dests); start += 500 {
			marks, args := inList(dests[start:min(start+500, len(dests))])
			n := len(args)
			rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT destination_url FROM links WHERE workspace_id = $`+strconv.Itoa(n+1)+
				` AND domain = $`+strconv.Itoa(n+2)+` AND destination_url IN (`+marks+`)`, append(args, workspaceID, domain)...)
			if err != nil {
				return nil, fmt.Errorf("links with destinations: %w", err)
			}
			for rows.Next() {
				k := importjob.Key{Domain: domain}
				if err := rows.Scan(&k.Slug); err != nil {
					rows.Close()
					return nil, fmt.Errorf("links with destinations: %w", err)
				}
				out[k] = true
			}
			if err := closeRows(rows); err != nil {
				return nil, fmt.Errorf("links with destinations: %w", err)
			}
		}
	}
	return out, nil
}

// LinkImportedClicks returns the clicks an import brought to the
// workspace's link (0 for none), or NOT_FOUND.
func (s *Store) LinkImportedClicks(ctx context.Context, workspaceID, linkID string) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT imported_clicks FROM links WHERE id = $1 AND workspace_id = $2`,
		linkID, workspaceID).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fault.NotFoundf("link")
	}
	if err != nil {
		return 0, fmt.Errorf("imported clicks: %w", err)
	}
	return n, nil
}

// EachLink calls fn with every link of the workspace, archived ones too,
// in the order of their ids, reading them a page at a time (GET
// /links/export): a link created meanwhile may be missed, none is repeated.
func (s *Store) EachLink(ctx context.Context, workspaceID string, fn func(*link.Link) error) error {
	after := ""
	for {
		rows, err := s.db.QueryContext(ctx, `SELECT `+s.linkSelect()+` FROM links WHERE workspace_id = $1 AND id > $2
			ORDER BY id LIMIT 500`, workspaceID, after)
		if err != nil {
			return fmt.Errorf("each link: %w", err)
		}
		var page []*link.Link
		for rows.Next() {
			l, err := scanLink(rows)
			if err != nil {
				rows.Close()
				return fmt.Errorf("each link: %w", err)
			}
			page = append(page, l)
		}
		if err := closeRows(rows); err != nil {
			return fmt.Errorf("each link: %w", err)
		}
		for _, l := range page {
			if err := fn(l); err != nil {
				return err
			}
		}
		if len(page) < 500 {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

func scanImportJob(row scanner) (*importjob.Job, error) {
	var (
		j                    importjob.Job
		status               string
		mapping, why         sql.NullString
		createdAt, updatedAt int64
		finished             sql.NullInt64
	)
	if err := row.Scan(&j.ID, &j.WorkspaceID, &j.Source, &j.FileName, &j.FileSize, &j.OnConflict, &mapping, &status,
		&j.Total, &j.Read, &j.Created, &j.Skipped, &j.Failed, &j.Position, &why, &j.CreatedBy, &createdAt, &updatedAt, &finished); err != nil {
		return nil, err
	}
	j.Status = importjob.Status(status)
	if mapping.Valid {
		if err := json.Unmarshal([]byte(mapping.String), &j.Mapping); err != nil {
			return nil, fmt.Errorf("import job %s mapping: %w", j.ID, err)
		}
	}
	j.Error = why.String
	j.CreatedAt, j.UpdatedAt, j.FinishedAt = fromMicros(createdAt), fromMicros(updatedAt), timePtr(finished)
	return &j, nil
}
