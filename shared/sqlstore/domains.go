package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/domain"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/webhook"
)

var _ domain.Store = (*Store)(nil)

const domainColumns = `id, workspace_id, name, verified, verified_at, token, last_error, created_at`

// CreateDomain implements domain.Store.
func (s *Store) CreateDomain(ctx context.Context, d *domain.Domain) error {
	err := s.execOne(ctx, "", `INSERT INTO domains (`+domainColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		d.ID, d.WorkspaceID, strings.ToLower(d.Name), d.Verified, nullMicros(d.VerifiedAt), d.Token,
		nullString(d.LastError), micros(d.CreatedAt))
	err = domainWriteError(err)
	if _, ok := fault.As(err); ok || err == nil {
		return err
	}
	return fmt.Errorf("create domain: %w", err)
}

// domainWriteError maps the unique indexes of domains to DOMAIN_EXISTS:
// (workspace_id, name), and name among verified domains (domains_verified_name).
func domainWriteError(err error) error {
	if !isUniqueViolation(err) {
		return err
	}
	if verifiedNameTaken(err) {
		return fault.Field(fault.DomainExists, "name", "is already verified by another workspace")
	}
	return fault.Field(fault.DomainExists, "name", "is already added to this workspace")
}

// verifiedNameTaken reports whether a unique violation is of the index that
// lets one domain of a name be verified.
func verifiedNameTaken(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.ConstraintName == "domains_verified_name"
	}
	// SQLite names the columns: "domains.name" alone for the partial index,
	// "domains.workspace_id, domains.name" for the workspace's own.
	return !strings.Contains(err.Error(), "domains.workspace_id")
}

// GetDomain implements domain.Store.
func (s *Store) GetDomain(ctx context.Context, workspaceID, id string) (*domain.Domain, error) {
	row := s.db.QueryRowContext(ctx, `SELECT `+domainColumns+` FROM domains WHERE id = $1 AND workspace_id = $2`, id, workspaceID)
	return scanOneDomain(row, "get domain")
}

// WorkspaceDomain implements domain.Store.
func (s *Store) WorkspaceDomain(ctx context.Context, workspaceID, name string) (*domain.Domain, error) {
	row := s.db.QueryRowContext(ctx, `SELECT `+domainColumns+` FROM domains WHERE workspace_id = $1 AND name = $2`,
		workspaceID, strings.ToLower(name))
	return scanOneDomain(row, "get domain")
}

// ListDomains implements domain.Store.
func (s *Store) ListDomains(ctx context.Context, f domain.Filter) ([]*domain.Domain, int, error) {
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM domains WHERE workspace_id = $1`, f.WorkspaceID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count domains: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+domainColumns+` FROM domains WHERE workspace_id = $1
		ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, f.WorkspaceID, f.Limit, f.Offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list domains: %w", err)
	}
	defer rows.Close()
	out := []*domain.Domain{}
	for rows.Next() {
		d, err := scanDomain(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list domains: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list domains: %w", err)
	}
	return out, total, nil
}

// MarkVerified implements domain.Store. In the same transaction the links
// and galleries other workspaces hold on the name (an import's links
// waiting for a verification of their own, or a former owner's) are moved
// aside (takeBackSlugs): the slugs are the verifying workspace's.
func (s *Store) MarkVerified(ctx context.Context, id string, at time.Time) error {
	if !bus.AddChanges(ctx) {
		ctx = bus.WithChanges(ctx)
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var name, ws string
		err := tx.QueryRowContext(ctx, `SELECT name, workspace_id FROM domains WHERE id = $1`, id).Scan(&name, &ws)
		if errors.Is(err, sql.ErrNoRows) {
			return fault.NotFoundf("domain")
		}
		if err != nil {
			return err
		}
		// Taken before the write, as import batches take it (checkImportDomains).
		if err := s.lockDomainNames(ctx, tx, []string{name}); err != nil {
			return err
		}
		// verified = FALSE makes a second verification (a concurrent one too:
		// PostgreSQL re-checks the row once the first commits) change nothing
		// and roll back, its webhook message with it.
		res, err := tx.ExecContext(ctx, `UPDATE domains SET verified = TRUE, verified_at = $1, last_error = NULL
			WHERE id = $2 AND verified = FALSE`, micros(at), id)
		if err != nil {
			return domainWriteError(err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 1 {
			return s.takeBackSlugs(ctx, tx, name, ws, at)
		}
		var verified bool
		err = tx.QueryRowContext(ctx, `SELECT verified FROM domains WHERE id = $1`, id).Scan(&verified)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fault.NotFoundf("domain")
		case err != nil:
			return err
		}
		return domain.ErrAlreadyVerified
	})
	if _, ok := fault.As(err); ok || err == nil || errors.Is(err, domain.ErrAlreadyVerified) {
		return err
	}
	return fmt.Errorf("verify domain: %w", err)
}

// takeBackSlugs moves aside, within tx, the links and the galleries of
// other workspaces than ws on the domain name that ws verifies now: the
// slugs are the name's owner's, who would be refused them (SLUG_EXISTS).
//
// None of the links ever redirected there (a link resolves only while its
// own workspace has its domain verified, and one workspace at a time can):
// they are an import's, waiting for a verification of their own, or a
// former owner's, archived when it removed the name. Each is archived and
// its slug becomes "_" and its id: a reserved slug (no API call nor import
// can take it) that no other link has. Its webhooks get link.updated
// (movedAsideEvents).
//
// The galleries are a former owner's (a gallery is made only on a verified
// domain of its workspace), unpublished when it removed the name: each
// stays unpublished and its slug becomes "_" and its id, which no gallery
// slug of the API can be (those are lower-case), so that the former owner
// cannot show its page on the name again.
//
// Each one's workspace's audit log records the change (link.updated or
// gallery.updated, by the system: nothing of the verifying workspace is
// shown), and the edges forget the old addresses.
func (s *Store) takeBackSlugs(ctx context.Context, tx *sql.Tx, name, ws string, at time.Time) error {
	for _, k := range asideKinds {
		if err := s.moveAside(ctx, tx, k, name, ws, at); err != nil {
			return err
		}
	}
	return s.movedAsideEvents(ctx, tx, name, ws, at)
}

// asideKind is what takeBackSlugs moves aside of one kind.
type asideKind struct {
	table    string // links or galleries
	resource string // the audit entry's resource type: link or gallery
	// flag is the column set to set (is_archived TRUE, is_published FALSE),
	// field its name in the audit entry.
	flag, field string
	set         bool
	editor      bool // the table records who changed a row last
	change      func(id, name, slug string) bus.LinkChange
}

var asideKinds = []asideKind{
	{table: "links", resource: "link", flag: "is_archived", field: "isArchived", set: true, editor: true,
		change: func(id, name, slug string) bus.LinkChange {
			return bus.LinkChange{LinkID: id, Domain: name, Slug: slug}
		}},
	{table: "galleries", resource: "gallery", flag: "is_published", field: "isPublished", set: false,
		change: func(_, name, slug string) bus.LinkChange {
			return bus.LinkChange{Kind: bus.KindGallery, Domain: name, Slug: slug}
		}},
}

// moveAside moves aside, within tx, the rows of kind k that other workspaces
// than ws hold on name (takeBackSlugs).
func (s *Store) moveAside(ctx context.Context, tx *sql.Tx, k asideKind, name, ws string, at time.Time) error {
	// Not those moved aside already (by an earlier owner's verification).
	where := `WHERE domain = $1 AND workspace_id <> $2 AND NOT (slug = ('_' || id) AND ` + k.flag + ` = $3)`
	rows, err := tx.QueryContext(ctx, `SELECT id, workspace_id, slug, `+k.flag+` FROM `+k.table+` `+where+` ORDER BY id`,
		name, ws, k.set)
	if err != nil {
		return err
	}
	type moved struct {
		id, ws, slug string
		flag         bool
	}
	var ms []moved
	for rows.Next() {
		var m moved
		if err := rows.Scan(&m.id, &m.ws, &m.slug, &m.flag); err != nil {
			rows.Close()
			return err
		}
		ms = append(ms, m)
	}
	if err := closeRows(rows); err != nil {
		return err
	}
	if len(ms) == 0 {
		return nil
	}
	sys := audit.System
	set, args := `slug = '_' || id, `+k.flag+` = $3, updated_at = $4`, []any{name, ws, k.set, micros(at)}
	if k.editor {
		set += `, editor_type = $5, editor_id = $6, editor_name = $7`
		args = append(args, actorType(&sys), actorID(&sys), actorName(&sys))
	}
	if _, err := tx.ExecContext(ctx, `UPDATE `+k.table+` SET `+set+` `+where, args...); err != nil {
		return err
	}
	entries := make([]audit.Entry, 0, len(ms))
	changes := make([]bus.LinkChange, 0, len(ms))
	for _, m := range ms {
		e, err := audit.Of(m.ws, k.resource+".updated", k.resource, m.id, map[string]any{"slug": m.slug, k.field: m.flag},
			map[string]any{"slug": "_" + m.id, k.field: k.set})
		if err != nil {
			return err
		}
		e.Actor = sys
		entries = append(entries, e)
		changes = append(changes, k.change(m.id, name, m.slug))
	}
	// Written as the system's, without the verifying request's address.
	if err := s.writeAudit(audit.WithRequest(ctx, audit.Request{Actor: sys}), tx, entries); err != nil {
		return err
	}
	bus.AddChanges(ctx, changes...)
	return nil
}

// movedAsideEvents adds to ctx's webhook messages, within tx, a
// link.updated event for each link takeBackSlugs moved aside, sent to its
// own workspace's webhooks (the only news it gets of the change), with the
// link as the API shows it now (webhook.LinkView). Nothing when ctx carries
// no view or no messages: a store test that verifies directly.
func (s *Store) movedAsideEvents(ctx context.Context, tx *sql.Tx, name, ws string, at time.Time) error {
	view := webhook.LinkView(ctx)
	if view == nil || !webhook.AddMessages(ctx) {
		return nil
	}
	// The links moveAside changed now: it wrote at as their updated_at.
	rows, err := tx.QueryContext(ctx, `SELECT `+s.linkSelect()+` FROM links
		WHERE domain = $1 AND workspace_id <> $2 AND updated_at = $3 ORDER BY id`, name, ws, micros(at))
	if err != nil {
		return err
	}
	var msgs []webhook.Message
	for rows.Next() {
		l, err := scanLink(rows)
		if err != nil {
			rows.Close()
			return err
		}
		m, err := webhook.NewMessage(l.WorkspaceID, webhook.EventLinkUpdated, view(l), at)
		if err != nil {
			rows.Close()
			return fmt.Errorf("%s event: %w", webhook.EventLinkUpdated, err)
		}
		msgs = append(msgs, m)
	}
	if err := closeRows(rows); err != nil {
		return err
	}
	webhook.AddMessages(ctx, msgs...)
	return nil
}

// SetLastError implements domain.Store.
func (s *Store) SetLastError(ctx context.Context, id, message string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE domains SET last_error = $1 WHERE id = $2 AND verified = FALSE`, message, id)
	if err != nil {
		return fmt.Errorf("record domain error: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM domains WHERE id = $1`, id).Scan(&n); err != nil {
		return fmt.Errorf("record domain error: %w", err)
	}
	if n == 0 {
		return fault.NotFoundf("domain")
	}
	return nil
}

// DeleteDomain implements domain.Store.
func (s *Store) DeleteDomain(ctx context.Context, workspaceID, id string, at time.Time) (*domain.Removal, error) {
	var r domain.Removal
	if !bus.AddChanges(ctx) {
		ctx = bus.WithChanges(ctx)
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		d, err := scanDomain(tx.QueryRowContext(ctx, `DELETE FROM domains WHERE id = $1 AND workspace_id = $2
			RETURNING `+domainColumns, id, workspaceID))
		if errors.Is(err, sql.ErrNoRows) {
			return fault.NotFoundf("domain")
		}
		if err != nil {
			return err
		}
		r = domain.Removal{Domain: d, Links: []domain.LinkRef{}, GallerySlugs: []string{}}
		// The links it archives were last changed by who removes it.
		by := requestActor(ctx)
		rows, err := tx.QueryContext(ctx, `UPDATE links SET is_archived = TRUE, updated_at = $1,
			editor_type = $4, editor_id = $5, editor_name = $6
			WHERE workspace_id = $2 AND domain = $3 AND is_archived = FALSE RETURNING id, slug`,
			micros(at), workspaceID, d.Name, actorType(by), actorID(by), actorName(by))
		if err != nil {
			return err
		}
		for rows.Next() {
			var l domain.LinkRef
			if err := rows.Scan(&l.ID, &l.Slug); err != nil {
				rows.Close()
				return err
			}
			r.Links = append(r.Links, l)
		}
		if err := closeRows(rows); err != nil {
			return err
		}
		rows, err = tx.QueryContext(ctx, `UPDATE galleries SET is_published = FALSE, updated_at = $1
			WHERE workspace_id = $2 AND domain = $3 AND is_published = TRUE RETURNING id, slug`,
			micros(at), workspaceID, d.Name)
		if err != nil {
			return err
		}
		var galleryIDs []string
		for rows.Next() {
			var galleryID, slug string
			if err := rows.Scan(&galleryID, &slug); err != nil {
				rows.Close()
				return err
			}
			r.GallerySlugs = append(r.GallerySlugs, slug)
			galleryIDs = append(galleryIDs, galleryID)
		}
		if err := closeRows(rows); err != nil {
			return err
		}
		// An audited removal (its entry in ctx) records what it did to the
		// links and galleries too, as the changes of the same actor.
		if pending, _ := audit.Take(ctx); len(pending) > 0 {
			var entries []audit.Entry
			add := func(action, typ, id, field string, old, new any) error {
				e, err := audit.Of(workspaceID, action, typ, id, map[string]any{field: old}, map[string]any{field: new})
				entries = append(entries, e)
				return err
			}
			for _, l := range r.Links {
				if err := add("link.deleted", "link", l.ID, "isArchived", false, true); err != nil {
					return err
				}
			}
			for _, g := range galleryIDs {
				if err := add("gallery.unpublished", "gallery", g, "isPublished", true, false); err != nil {
					return err
				}
			}
			if err := s.writeAudit(ctx, tx, entries); err != nil {
				return err
			}
		}
		// The edges forget what the removal changed, through the outbox
		// (bus.WithChanges): each archived link, each unpublished page, and
		// which workspace the name's Host serves.
		changes := make([]bus.LinkChange, 0, len(r.Links)+len(r.GallerySlugs)+1)
		for _, l := range r.Links {
			changes = append(changes, bus.LinkChange{LinkID: l.ID, Domain: d.Name, Slug: l.Slug})
		}
		for _, slug := range r.GallerySlugs {
			changes = append(changes, bus.LinkChange{Kind: bus.KindGallery, Domain: d.Name, Slug: slug})
		}
		changes = append(changes, bus.LinkChange{Kind: bus.KindDomain, Domain: d.Name})
		bus.AddChanges(ctx, changes...)
		return nil
	})
	if _, ok := fault.As(err); ok {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("delete domain: %w", err)
	}
	return &r, nil
}

// closeRows closes rows and returns the error that ended their iteration.
func closeRows(rows *sql.Rows) error {
	err := rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return err
}

// IsVerifiedDomain implements domain.Store.
func (s *Store) IsVerifiedDomain(ctx context.Context, name string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM domains WHERE name = $1 AND verified = TRUE`,
		strings.ToLower(name)).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("check domain: %w", err)
	}
	return n > 0, nil
}

func scanOneDomain(row scanner, op string) (*domain.Domain, error) {
	d, err := scanDomain(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.NotFoundf("domain")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return d, nil
}

func scanDomain(row scanner) (*domain.Domain, error) {
	var (
		d          domain.Domain
		verifiedAt sql.NullInt64
		lastError  sql.NullString
		created    int64
	)
	if err := row.Scan(&d.ID, &d.WorkspaceID, &d.Name, &d.Verified, &verifiedAt, &d.Token, &lastError, &created); err != nil {
		return nil, err
	}
	d.VerifiedAt, d.LastError, d.CreatedAt = timePtr(verifiedAt), stringPtr(lastError), fromMicros(created)
	return &d, nil
}
