package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/gallery"
)

var _ gallery.Store = (*Store)(nil)

const galleryColumns = `id, workspace_id, domain, slug, title, bio, avatar_url, theme, custom_css,
	social_links, is_published, created_at, updated_at`

// itemSelect reads items with their link's address (LEFT JOIN: only link
// items have one).
const itemSelect = `SELECT i.id, i.gallery_id, i.type, i.title, i.url, i.icon_name, i.thumbnail_url,
	i.embed_type, i.embed_data, i.position, i.link_id, i.owns_link, i.created_at, i.updated_at,
	COALESCE(l.domain, ''), COALESCE(l.slug, ''), COALESCE(l.is_archived, FALSE)
	FROM gallery_items i LEFT JOIN links l ON l.id = i.link_id`

// CreateGallery implements gallery.Store.
func (s *Store) CreateGallery(ctx context.Context, g *gallery.Gallery) error {
	social, err := json.Marshal(socialOrEmpty(g.SocialLinks))
	if err != nil {
		return err
	}
	// A transaction, for the link changes ctx may carry (bus.WithChanges).
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO galleries (`+galleryColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			g.ID, g.WorkspaceID, g.Domain, g.Slug, nullString(g.Title), nullString(g.Bio), nullString(g.AvatarURL),
			string(g.Theme), nullString(g.CustomCSS), string(social), g.IsPublished, micros(g.CreatedAt), micros(g.UpdatedAt))
		return err
	})
	return galleryWriteError("create gallery", err)
}

// UpdateGallery implements gallery.Store.
func (s *Store) UpdateGallery(ctx context.Context, g *gallery.Gallery, readAt time.Time) error {
	social, err := json.Marshal(socialOrEmpty(g.SocialLinks))
	if err != nil {
		return err
	}
	// A transaction, for the link changes ctx may carry (bus.WithChanges):
	// they are stored only when the update is.
	errStale := errors.New("stale")
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE galleries SET domain = $3, slug = $4, title = $5, bio = $6,
		avatar_url = $7, theme = $8, custom_css = $9, social_links = $10, is_published = $11, updated_at = $12
		WHERE id = $1 AND workspace_id = $2 AND updated_at = $13`,
			g.ID, g.WorkspaceID, g.Domain, g.Slug, nullString(g.Title), nullString(g.Bio), nullString(g.AvatarURL),
			string(g.Theme), nullString(g.CustomCSS), string(social), g.IsPublished, micros(g.UpdatedAt), micros(readAt))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		return errStale
	})
	if err == nil {
		return nil
	}
	if !errors.Is(err, errStale) {
		return galleryWriteError("update gallery", err)
	}
	// Gone, or changed since it was read: say which.
	if _, err := s.GetGallery(ctx, g.WorkspaceID, g.ID); err != nil {
		return err
	}
	return gallery.ErrChanged
}

func galleryWriteError(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case isUniqueViolation(err):
		return fault.Field(fault.SlugExists, "slug", "is already used on this domain")
	}
	return fmt.Errorf("%s: %w", op, err)
}

// DeleteGallery implements gallery.Store.
func (s *Store) DeleteGallery(ctx context.Context, workspaceID, id string) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		// Items first: SQLite enforces ON DELETE CASCADE only with foreign_keys
		// on, which a database opened by other means may lack.
		if _, err := tx.ExecContext(ctx, `DELETE FROM gallery_items WHERE gallery_id IN
			(SELECT id FROM galleries WHERE id = $1 AND workspace_id = $2)`, id, workspaceID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM galleries WHERE id = $1 AND workspace_id = $2`, id, workspaceID)
		return affectedOne(res, err, "delete gallery", "gallery")
	})
	if _, ok := fault.As(err); ok || err == nil {
		return err
	}
	return fmt.Errorf("delete gallery: %w", err)
}

// GetGallery implements gallery.Store.
func (s *Store) GetGallery(ctx context.Context, workspaceID, id string) (*gallery.Gallery, error) {
	return s.oneGallery(ctx, `WHERE id = $1 AND workspace_id = $2`, id, workspaceID)
}

// ResolveGallery implements gallery.Store. As a link (ResolveLink), a
// gallery on a custom domain resolves only while its own workspace has the
// name verified: a former owner's page never shows on a name that changed
// hands.
func (s *Store) ResolveGallery(ctx context.Context, domain, slug string) (*gallery.Gallery, error) {
	return s.oneGallery(ctx, `WHERE domain = $1 AND slug = $2
		AND (NOT EXISTS (SELECT 1 FROM domains d WHERE d.name = $1)
			OR EXISTS (SELECT 1 FROM domains d WHERE d.name = $1 AND d.workspace_id = galleries.workspace_id AND d.verified = TRUE))`,
		domain, slug)
}

func (s *Store) oneGallery(ctx context.Context, where string, a, b string) (*gallery.Gallery, error) {
	g, err := scanGallery(s.db.QueryRowContext(ctx, `SELECT `+galleryColumns+` FROM galleries `+where, a, b))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.NotFoundf("gallery")
	}
	if err != nil {
		return nil, fmt.Errorf("get gallery: %w", err)
	}
	if err := s.loadItems(ctx, []*gallery.Gallery{g}); err != nil {
		return nil, err
	}
	return g, nil
}

// ListGalleries implements gallery.Store.
func (s *Store) ListGalleries(ctx context.Context, f gallery.Filter) ([]*gallery.Gallery, int, error) {
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM galleries WHERE workspace_id = $1`,
		f.WorkspaceID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count galleries: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+galleryColumns+` FROM galleries WHERE workspace_id = $1
		ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, f.WorkspaceID, f.Limit, f.Offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list galleries: %w", err)
	}
	out := []*gallery.Gallery{}
	for rows.Next() {
		g, err := scanGallery(rows)
		if err != nil {
			rows.Close()
			return nil, 0, fmt.Errorf("list galleries: %w", err)
		}
		out = append(out, g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list galleries: %w", err)
	}
	if err := s.loadItems(ctx, out); err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// PagesOfLink implements gallery.Store.
func (s *Store) PagesOfLink(ctx context.Context, linkID string) ([]gallery.Page, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT g.domain, g.slug FROM galleries g
		JOIN gallery_items i ON i.gallery_id = g.id WHERE i.link_id = $1`, linkID)
	if err != nil {
		return nil, fmt.Errorf("read the galleries of a link: %w", err)
	}
	defer rows.Close()
	var out []gallery.Page
	for rows.Next() {
		var p gallery.Page
		if err := rows.Scan(&p.Domain, &p.Slug); err != nil {
			return nil, fmt.Errorf("read the galleries of a link: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the galleries of a link: %w", err)
	}
	return out, nil
}

// CountGalleries implements gallery.Store.
func (s *Store) CountGalleries(ctx context.Context, workspaceID string) (int, error) {
	return s.count(ctx, `SELECT COUNT(*) FROM galleries WHERE workspace_id = $1`, workspaceID, "count galleries")
}

// loadItems sets the items of the galleries, in one query.
func (s *Store) loadItems(ctx context.Context, gs []*gallery.Gallery) error {
	if len(gs) == 0 {
		return nil
	}
	byID := make(map[string]*gallery.Gallery, len(gs))
	ids := make([]string, len(gs))
	for i, g := range gs {
		g.Items = []*gallery.Item{}
		byID[g.ID] = g
		ids[i] = g.ID
	}
	marks, args := inList(ids)
	rows, err := s.db.QueryContext(ctx, itemSelect+` WHERE i.gallery_id IN (`+marks+`)
		ORDER BY i.gallery_id, i.position, i.id`, args...)
	if err != nil {
		return fmt.Errorf("read gallery items: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		it, err := scanItem(rows)
		if err != nil {
			return fmt.Errorf("read gallery items: %w", err)
		}
		if g := byID[it.GalleryID]; g != nil {
			g.Items = append(g.Items, it)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read gallery items: %w", err)
	}
	return nil
}

// AddItem implements gallery.Store.
func (s *Store) AddItem(ctx context.Context, workspaceID string, it *gallery.Item) error {
	data, err := jsonMap(it.EmbedData)
	if err != nil {
		return err
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.lockGallery(ctx, tx, workspaceID, it.GalleryID); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(position) + 1, 0) FROM gallery_items WHERE gallery_id = $1`,
			it.GalleryID).Scan(&it.Position); err != nil {
			return err
		}
		if it.Position >= gallery.MaxItems {
			return fault.New(fault.Validation, "a gallery holds at most %d items", gallery.MaxItems)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO gallery_items (id, gallery_id, type, title, url, icon_name,
			thumbnail_url, embed_type, embed_data, position, link_id, owns_link, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			it.ID, it.GalleryID, string(it.Type), nullString(it.Title), nullString(it.URL), nullString(it.IconName),
			nullString(it.ThumbnailURL), nullString(it.EmbedType), data, it.Position, nullString(it.LinkID), it.OwnsLink,
			micros(it.CreatedAt), micros(it.UpdatedAt)); err != nil {
			return err
		}
		return touchGallery(ctx, tx, it.GalleryID, it.UpdatedAt.UnixMicro())
	})
	return itemWriteError("add gallery item", err)
}

// UpdateItem implements gallery.Store.
func (s *Store) UpdateItem(ctx context.Context, workspaceID string, it *gallery.Item) error {
	data, err := jsonMap(it.EmbedData)
	if err != nil {
		return err
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.lockGallery(ctx, tx, workspaceID, it.GalleryID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE gallery_items SET type = $3, title = $4, url = $5, icon_name = $6,
			thumbnail_url = $7, embed_type = $8, embed_data = $9, link_id = $10, owns_link = $11, updated_at = $12
			WHERE id = $1 AND gallery_id = $2`,
			it.ID, it.GalleryID, string(it.Type), nullString(it.Title), nullString(it.URL), nullString(it.IconName),
			nullString(it.ThumbnailURL), nullString(it.EmbedType), data, nullString(it.LinkID), it.OwnsLink,
			micros(it.UpdatedAt))
		if err := affectedOne(res, err, "update gallery item", "gallery item"); err != nil {
			return err
		}
		return touchGallery(ctx, tx, it.GalleryID, it.UpdatedAt.UnixMicro())
	})
	return itemWriteError("update gallery item", err)
}

// DeleteItem implements gallery.Store.
func (s *Store) DeleteItem(ctx context.Context, workspaceID, galleryID, itemID string) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.lockGallery(ctx, tx, workspaceID, galleryID); err != nil {
			return err
		}
		var pos int
		err := tx.QueryRowContext(ctx, `SELECT position FROM gallery_items WHERE id = $1 AND gallery_id = $2`,
			itemID, galleryID).Scan(&pos)
		if errors.Is(err, sql.ErrNoRows) {
			return fault.NotFoundf("gallery item")
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM gallery_items WHERE id = $1`, itemID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE gallery_items SET position = position - 1
			WHERE gallery_id = $1 AND position > $2`, galleryID, pos); err != nil {
			return err
		}
		return touchGallery(ctx, tx, galleryID, micros(s.Now()))
	})
	return itemWriteError("delete gallery item", err)
}

// ReorderItems implements gallery.Store.
func (s *Store) ReorderItems(ctx context.Context, workspaceID, galleryID string, ids []string) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.lockGallery(ctx, tx, workspaceID, galleryID); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT id FROM gallery_items WHERE gallery_id = $1`, galleryID)
		if err != nil {
			return err
		}
		have := map[string]bool{}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			have[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if why := permutationError(have, ids); why != "" {
			return fault.Field(fault.Validation, "itemIds", why)
		}
		for pos, id := range ids {
			if _, err := tx.ExecContext(ctx, `UPDATE gallery_items SET position = $1 WHERE id = $2 AND gallery_id = $3`,
				pos, id, galleryID); err != nil {
				return err
			}
		}
		return touchGallery(ctx, tx, galleryID, micros(s.Now()))
	})
	return itemWriteError("reorder gallery items", err)
}

// permutationError says why ids is not every id of have exactly once, or "".
func permutationError(have map[string]bool, ids []string) string {
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		switch {
		case !have[id]:
			return fmt.Sprintf("%q is not an item of this gallery", id)
		case seen[id]:
			return fmt.Sprintf("%q is listed twice", id)
		}
		seen[id] = true
	}
	if len(ids) != len(have) {
		return fmt.Sprintf("must list every item of the gallery exactly once (%d items, %d listed)", len(have), len(ids))
	}
	return ""
}

// lockGallery checks, within tx, that the gallery is the workspace's, and
// on PostgreSQL locks its row so that item writes of one gallery take turns
// (positions are computed from the others). SQLite's transactions take the
// database's write lock.
func (s *Store) lockGallery(ctx context.Context, tx *sql.Tx, workspaceID, galleryID string) error {
	q := `SELECT id FROM galleries WHERE id = $1 AND workspace_id = $2`
	if s.dialect == postgres {
		q += ` FOR UPDATE`
	}
	var id string
	err := tx.QueryRowContext(ctx, q, galleryID, workspaceID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return fault.NotFoundf("gallery")
	}
	return err
}

func touchGallery(ctx context.Context, tx *sql.Tx, galleryID string, at int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE galleries SET updated_at = $2 WHERE id = $1`, galleryID, at)
	return err
}

func itemWriteError(op string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := fault.As(err); ok {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}

func scanGallery(row scanner) (*gallery.Gallery, error) {
	var (
		g                       gallery.Gallery
		title, bio, avatar, css sql.NullString
		theme, social           string
		createdAt, updatedAt    int64
	)
	if err := row.Scan(&g.ID, &g.WorkspaceID, &g.Domain, &g.Slug, &title, &bio, &avatar, &theme, &css,
		&social, &g.IsPublished, &createdAt, &updatedAt); err != nil {
		return nil, err
	}
	g.Title, g.Bio, g.AvatarURL, g.CustomCSS = stringPtr(title), stringPtr(bio), stringPtr(avatar), stringPtr(css)
	g.Theme = gallery.Theme(theme)
	g.CreatedAt, g.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	if err := json.Unmarshal([]byte(social), &g.SocialLinks); err != nil {
		return nil, fmt.Errorf("gallery %s social links: %w", g.ID, err)
	}
	g.SocialLinks = socialOrEmpty(g.SocialLinks)
	g.Items = []*gallery.Item{}
	return &g, nil
}

func scanItem(row scanner) (*gallery.Item, error) {
	var (
		it                                   gallery.Item
		typ                                  string
		title, u, icon, thumb, embType, data sql.NullString
		linkID                               sql.NullString
		createdAt, updatedAt                 int64
	)
	if err := row.Scan(&it.ID, &it.GalleryID, &typ, &title, &u, &icon, &thumb, &embType, &data, &it.Position,
		&linkID, &it.OwnsLink, &createdAt, &updatedAt, &it.LinkDomain, &it.LinkSlug, &it.LinkArchived); err != nil {
		return nil, err
	}
	it.Type = gallery.ItemType(typ)
	it.Title, it.URL, it.IconName, it.ThumbnailURL = stringPtr(title), stringPtr(u), stringPtr(icon), stringPtr(thumb)
	it.EmbedType, it.LinkID = stringPtr(embType), stringPtr(linkID)
	it.CreatedAt, it.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	if data.Valid {
		if err := json.Unmarshal([]byte(data.String), &it.EmbedData); err != nil {
			return nil, fmt.Errorf("gallery item %s embed data: %w", it.ID, err)
		}
	}
	return &it, nil
}

func socialOrEmpty(s []gallery.SocialLink) []gallery.SocialLink {
	if s == nil {
		return []gallery.SocialLink{}
	}
	return s
}
