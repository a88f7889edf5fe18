package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/link"
)

var _ link.Store = (*Store)(nil)

const linkColumns = `id, workspace_id, domain, slug, destination_url, title, description, tags,
	password_hash, expires_at, expired_url, click_limit, click_count, geo_targets, device_targets,
	ios_url, android_url, utm_source, utm_medium, utm_campaign, utm_term, utm_content,
	is_archived, last_clicked_at, created_by, created_at, updated_at,
	author_type, author_id, author_name, editor_type, editor_id, editor_name`

// clickLedger is, in a query on links under the name t (the table's name or
// its alias), the clicks that the link's clickLimit ledger ever charged, as a
// BIGINT: its shards' use while it has a limit, what it parks while it has
// none (see limitShards; the parked use is 0 while the link has shards, so
// this is sum(used) plus the parked use). Only a limited link costs a read, of
// its shard rows by their primary key. clickCount and ClickGaps both read it.
func clickLedger(t string) string {
	return `CAST((CASE WHEN ` + t + `.click_limit IS NULL THEN ` + t + `.click_limit_used
	ELSE COALESCE((SELECT SUM(s.used) FROM link_limit_shards s WHERE s.link_id = ` + t + `.id), 0) END) AS BIGINT)`
}

// clickCount is the link's clickCount as the API shows and sorts it: the
// larger of the analytics pipeline's count and the ledger's. The ledger
// decided the redirects of a limited link and is written before its click
// leaves the edge, so after a crash it holds clicks the pipeline never got;
// the pipeline counts the clicks made while the link had no limit, which the
// ledger never saw. Both only grow, so clickCount never goes down, also when
// the limit is removed (the ledger's use is parked then) or changed.
//
// The clicks an import brought (imported_clicks, issue 23) are added: they
// were made elsewhere, before the link came here, so neither count has them.
func (s *Store) clickCount() string {
	if s.dialect == postgres {
		return `(GREATEST(links.click_count, ` + clickLedger("links") + `) + links.imported_clicks)`
	}
	return `(MAX(links.click_count, ` + clickLedger("links") + `) + links.imported_clicks)`
}

// linkSelect is linkColumns to read, with clickCount in place of the
// pipeline's click_count.
func (s *Store) linkSelect() string {
	return strings.Replace(linkColumns, "click_count", s.clickCount()+" AS click_count", 1)
}

// CreateLink implements link.Store.
func (s *Store) CreateLink(ctx context.Context, l *link.Link, maxActive int) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.checkLinkLimit(ctx, tx, l.WorkspaceID, maxActive); err != nil {
			return err
		}
		return s.insertLink(ctx, tx, l)
	})
	return linkWriteError("create link", err)
}

// insertLink writes the new link l (with its imported clicks, its click
// limit's shards and its tags) within tx.
func (s *Store) insertLink(ctx context.Context, tx *sql.Tx, l *link.Link) error {
	row, err := linkRow(l)
	if err != nil {
		return err
	}
	if err := s.insertRows(ctx, tx, `INSERT INTO links (`+linkColumns+`, imported_clicks) VALUES `, [][]any{row}); err != nil {
		return err
	}
	if l.ClickLimit != nil {
		if err := s.syncClickLimit(ctx, tx, l.ID, l.ClickLimit); err != nil {
			return err
		}
	}
	return writeTags(ctx, tx, l.ID, l.Tags)
}

// linkRow returns the values of linkColumns and imported_clicks of l, in
// their order: the row insertLink and an import's insertLinks write.
func linkRow(l *link.Link) ([]any, error) {
	tags, geo, device, err := encodeLinkJSON(l)
	if err != nil {
		return nil, err
	}
	return []any{l.ID, l.WorkspaceID, l.Domain, l.Slug, l.DestinationURL, nullString(l.Title), nullString(l.Description), tags,
		l.PasswordHash, nullMicros(l.ExpiresAt), nullString(l.ExpiredURL), nullInt(l.ClickLimit), l.ClickCount, geo, device,
		nullString(l.IOSURL), nullString(l.AndroidURL), nullString(l.UTM.Source), nullString(l.UTM.Medium),
		nullString(l.UTM.Campaign), nullString(l.UTM.Term), nullString(l.UTM.Content),
		l.IsArchived, nullMicros(l.LastClickedAt), l.CreatedBy, micros(l.CreatedAt), micros(l.UpdatedAt),
		actorType(l.Author), actorID(l.Author), actorName(l.Author),
		actorType(l.Editor), actorID(l.Editor), actorName(l.Editor),
		l.ImportedClicks}, nil
}

// UpdateLink implements link.Store. It leaves clickCount and lastClickedAt,
// which only the click pipeline writes, as they are, and the clicks charged
// against clickLimit: a changed limit counts them (see limitShards).
func (s *Store) UpdateLink(ctx context.Context, l *link.Link, readAt time.Time, maxActive int) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error { return s.updateLink(ctx, tx, l, readAt, maxActive) })
	return linkWriteError("update link", err)
}

// UpdateLinks implements link.Store: every link as UpdateLink writes it,
// all in one transaction. It writes them in the order of their ids, so
// that two transactions writing the same links cannot deadlock.
func (s *Store) UpdateLinks(ctx context.Context, ls []*link.Link, readAt []time.Time, maxActive int) error {
	if len(readAt) != len(ls) {
		return fmt.Errorf("update links: %d links, %d read times", len(ls), len(readAt))
	}
	order := make([]int, len(ls))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return ls[order[a]].ID < ls[order[b]].ID })
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for _, i := range order {
			if err := s.updateLink(ctx, tx, ls[i], readAt[i], maxActive); err != nil {
				return err
			}
		}
		return nil
	})
	return linkWriteError("update links", err)
}

// updateLink writes l within tx (UpdateLink) if it was last updated at
// readAt, else returns link.ErrChanged.
func (s *Store) updateLink(ctx context.Context, tx *sql.Tx, l *link.Link, readAt time.Time, maxActive int) error {
	var archived bool
	err := tx.QueryRowContext(ctx, `SELECT is_archived FROM links WHERE id = $1 AND workspace_id = $2`,
		l.ID, l.WorkspaceID).Scan(&archived)
	if errors.Is(err, sql.ErrNoRows) {
		return fault.NotFoundf("link")
	}
	if err != nil {
		return err
	}
	if archived && !l.IsArchived {
		if err := s.checkLinkLimit(ctx, tx, l.WorkspaceID, maxActive); err != nil {
			return err
		}
	}
	tags, geo, device, err := encodeLinkJSON(l)
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `UPDATE links SET domain = $3, slug = $4, destination_url = $5,
		title = $6, description = $7, tags = $8, password_hash = $9, expires_at = $10, expired_url = $11,
		click_limit = $12, geo_targets = $13, device_targets = $14, ios_url = $15, android_url = $16,
		utm_source = $17, utm_medium = $18, utm_campaign = $19, utm_term = $20, utm_content = $21,
		is_archived = $22, updated_at = $23, editor_type = $25, editor_id = $26, editor_name = $27
		WHERE id = $1 AND workspace_id = $2 AND updated_at = $24`,
		l.ID, l.WorkspaceID, l.Domain, l.Slug, l.DestinationURL, nullString(l.Title), nullString(l.Description),
		tags, l.PasswordHash, nullMicros(l.ExpiresAt), nullString(l.ExpiredURL), nullInt(l.ClickLimit), geo, device,
		nullString(l.IOSURL), nullString(l.AndroidURL), nullString(l.UTM.Source), nullString(l.UTM.Medium),
		nullString(l.UTM.Campaign), nullString(l.UTM.Term), nullString(l.UTM.Content), l.IsArchived, micros(l.UpdatedAt),
		micros(readAt), actorType(l.Editor), actorID(l.Editor), actorName(l.Editor),
	)
	if err != nil {
		return err
	}
	// The WHERE holds the check: PostgreSQL evaluates it again on the row a
	// concurrent writer committed, SQLite lets one writer in at a time.
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != 1 {
		return link.ErrChanged
	}
	if err := s.syncClickLimit(ctx, tx, l.ID, l.ClickLimit); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM link_tags WHERE link_id = $1`, l.ID); err != nil {
		return err
	}
	return writeTags(ctx, tx, l.ID, l.Tags)
}

// checkLinkLimit fails with LIMIT_REACHED when the workspace has maxActive
// active links already. It runs inside the writing transaction so that
// concurrent creators cannot both pass it.
func (s *Store) checkLinkLimit(ctx context.Context, tx *sql.Tx, workspaceID string, maxActive int) error {
	if maxActive < 0 {
		return nil
	}
	if err := s.lockWorkspace(ctx, tx, workspaceID); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM links WHERE workspace_id = $1 AND is_archived = FALSE`,
		workspaceID).Scan(&n); err != nil {
		return err
	}
	if n >= maxActive {
		return fault.New(fault.LimitReached, "your plan allows %d active links; archive links or upgrade the plan", maxActive)
	}
	return nil
}

func linkWriteError(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case isUniqueViolation(err):
		return fault.Field(fault.SlugExists, "slug", "is already used on this domain")
	}
	if _, ok := fault.As(err); ok {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}

func writeTags(ctx context.Context, tx *sql.Tx, linkID string, tags []string) error {
	for _, t := range tags {
		if _, err := tx.ExecContext(ctx, `INSERT INTO link_tags (link_id, tag) VALUES ($1, $2)`, linkID, t); err != nil {
			return err
		}
	}
	return nil
}

// GetLink implements link.Store.
func (s *Store) GetLink(ctx context.Context, workspaceID, id string) (*link.Link, error) {
	row := s.db.QueryRowContext(ctx, `SELECT `+s.linkSelect()+` FROM links WHERE id = $1 AND workspace_id = $2`, id, workspaceID)
	return scanOneLink(row, "get link")
}

// ResolveLink implements link.Store.
func (s *Store) ResolveLink(ctx context.Context, domain, slug string) (*link.Link, error) {
	// A name in the domains table is a custom domain: its links resolve only
	// while their own workspace has it verified, so that a name that changed
	// hands never serves the former owner's links. The default domain is
	// never in the table.
	row := s.db.QueryRowContext(ctx, `SELECT `+linkColumns+` FROM links WHERE domain = $1 AND slug = $2
		AND (NOT EXISTS (SELECT 1 FROM domains d WHERE d.name = $1)
			OR EXISTS (SELECT 1 FROM domains d WHERE d.name = $1 AND d.workspace_id = links.workspace_id AND d.verified = TRUE))`,
		domain, slug)
	return scanOneLink(row, "resolve link")
}

// CountActiveLinks implements link.Store.
func (s *Store) CountActiveLinks(ctx context.Context, workspaceID string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM links WHERE workspace_id = $1 AND is_archived = FALSE`,
		workspaceID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count links: %w", err)
	}
	return n, nil
}

// LinkFacets implements link.Store.
func (s *Store) LinkFacets(ctx context.Context, workspaceID string) ([]link.Facets, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, domain, tags, COALESCE(utm_source, ''),
		COALESCE(utm_medium, ''), COALESCE(utm_campaign, '') FROM links WHERE workspace_id = $1 ORDER BY id`,
		workspaceID)
	if err != nil {
		return nil, fmt.Errorf("link facets: %w", err)
	}
	defer rows.Close()
	out := []link.Facets{}
	for rows.Next() {
		var f link.Facets
		var tags string
		if err := rows.Scan(&f.ID, &f.Domain, &tags, &f.UTMSource, &f.UTMMedium, &f.UTMCampaign); err != nil {
			return nil, fmt.Errorf("link facets: %w", err)
		}
		if err := json.Unmarshal([]byte(tags), &f.Tags); err != nil {
			return nil, fmt.Errorf("link facets: link %s: tags: %w", f.ID, err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("link facets: %w", err)
	}
	return out, nil
}

// ListLinks implements link.Store.
func (s *Store) ListLinks(ctx context.Context, f link.Filter) ([]*link.Link, int, error) {
	where := []string{"workspace_id = $1"}
	args := []any{f.WorkspaceID}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	switch {
	case f.OnlyArchived:
		where = append(where, "is_archived = TRUE")
	case !f.Archived:
		where = append(where, "is_archived = FALSE")
	}
	if f.Domain != "" {
		where = append(where, "domain = "+arg(strings.ToLower(f.Domain)))
	}
	if f.Tag != "" {
		where = append(where, "EXISTS (SELECT 1 FROM link_tags t WHERE t.link_id = links.id AND t.tag = "+arg(f.Tag)+")")
	}
	if f.Search != "" {
		p := arg("%" + escapeLike(strings.ToLower(f.Search)) + "%")
		where = append(where, "("+s.lower("slug")+" LIKE "+p+" ESCAPE '\\' OR "+s.lower("destination_url")+" LIKE "+p+
			" ESCAPE '\\' OR "+s.lower("COALESCE(title, '')")+" LIKE "+p+" ESCAPE '\\')")
	}
	cond := strings.Join(where, " AND ")

	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM links WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count links: %w", err)
	}
	order := "created_at DESC, id DESC"
	switch f.Sort {
	case link.SortClicks:
		// Computed, not read from the (workspace_id, click_count) index:
		// a page sorted by clicks reads the workspace's links that match.
		order = s.clickCount() + " DESC, created_at DESC, id DESC"
	case link.SortUpdated:
		order = "updated_at DESC, id DESC"
	}
	q := `SELECT ` + s.linkSelect() + ` FROM links WHERE ` + cond + ` ORDER BY ` + order +
		` LIMIT ` + arg(f.Limit) + ` OFFSET ` + arg(f.Offset)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list links: %w", err)
	}
	defer rows.Close()
	out := []*link.Link{}
	for rows.Next() {
		l, err := scanLink(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list links: %w", err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list links: %w", err)
	}
	return out, total, nil
}

// escapeLike escapes LIKE's wildcards so that a search matches them literally.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

type scanner interface{ Scan(dest ...any) error }

func scanOneLink(row scanner, op string) (*link.Link, error) {
	l, err := scanLink(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.NotFoundf("link")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return l, nil
}

func scanLink(row scanner) (*link.Link, error) {
	var (
		l                                        link.Link
		title, desc, expiredURL, geo, device     sql.NullString
		ios, android, src, med, camp, term, cont sql.NullString
		tags                                     string
		expiresAt, clickLimit, lastClicked       sql.NullInt64
		createdAt, updatedAt                     int64
		authorType, authorID, authorName         sql.NullString
		editorType, editorID, editorName         sql.NullString
	)
	if err := row.Scan(&l.ID, &l.WorkspaceID, &l.Domain, &l.Slug, &l.DestinationURL, &title, &desc, &tags,
		&l.PasswordHash, &expiresAt, &expiredURL, &clickLimit, &l.ClickCount, &geo, &device,
		&ios, &android, &src, &med, &camp, &term, &cont,
		&l.IsArchived, &lastClicked, &l.CreatedBy, &createdAt, &updatedAt,
		&authorType, &authorID, &authorName, &editorType, &editorID, &editorName); err != nil {
		return nil, err
	}
	l.Author = actorOf(authorType, authorID, authorName)
	l.Editor = actorOf(editorType, editorID, editorName)
	l.Title, l.Description, l.ExpiredURL = stringPtr(title), stringPtr(desc), stringPtr(expiredURL)
	l.IOSURL, l.AndroidURL = stringPtr(ios), stringPtr(android)
	l.UTM = link.UTM{Source: stringPtr(src), Medium: stringPtr(med), Campaign: stringPtr(camp), Term: stringPtr(term), Content: stringPtr(cont)}
	l.ExpiresAt, l.LastClickedAt = timePtr(expiresAt), timePtr(lastClicked)
	if clickLimit.Valid {
		v := clickLimit.Int64
		l.ClickLimit = &v
	}
	l.CreatedAt, l.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	if err := json.Unmarshal([]byte(tags), &l.Tags); err != nil {
		return nil, fmt.Errorf("link %s tags: %w", l.ID, err)
	}
	if l.Tags == nil {
		l.Tags = []string{}
	}
	for _, m := range []struct {
		src sql.NullString
		dst *map[string]string
	}{{geo, &l.GeoTargets}, {device, &l.DeviceTargets}} {
		if m.src.Valid {
			if err := json.Unmarshal([]byte(m.src.String), m.dst); err != nil {
				return nil, fmt.Errorf("link %s targets: %w", l.ID, err)
			}
		}
	}
	return &l, nil
}

func encodeLinkJSON(l *link.Link) (tags string, geo, device sql.NullString, err error) {
	t := l.Tags
	if t == nil {
		t = []string{}
	}
	b, err := json.Marshal(t)
	if err != nil {
		return "", geo, device, err
	}
	if geo, err = jsonMap(l.GeoTargets); err != nil {
		return "", geo, device, err
	}
	device, err = jsonMap(l.DeviceTargets)
	return string(b), geo, device, err
}

func jsonMap(m map[string]string) (sql.NullString, error) {
	if len(m) == 0 {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(m)
	return sql.NullString{String: string(b), Valid: true}, err
}

func nullInt(p *int64) sql.NullInt64 {
	if p == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: *p, Valid: true}
}

// actorType, actorID and actorName are the columns of a link's author or
// editor: NULL when not known.
func actorType(a *audit.Actor) sql.NullString {
	if a == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: string(a.Type), Valid: true}
}

func actorID(a *audit.Actor) sql.NullString {
	if a == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: a.ID, Valid: true}
}

func actorName(a *audit.Actor) sql.NullString {
	if a == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: a.Name, Valid: true}
}

// actorOf reads a link's author or editor: nil when not known.
func actorOf(typ, id, name sql.NullString) *audit.Actor {
	if !typ.Valid {
		return nil
	}
	return &audit.Actor{Type: audit.ActorType(typ.String), ID: id.String, Name: name.String}
}

// requestActor is who acts in ctx (audit.WithRequest), else the system.
func requestActor(ctx context.Context) *audit.Actor {
	if r, ok := audit.RequestOf(ctx); ok && r.Actor.Type != "" {
		return &r.Actor
	}
	a := audit.System
	return &a
}
