package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"shortlink.dev/shared/link"
)

// What the edge reads besides one link: the (domain, slug) keys of every
// link, for its filter of the slugs that exist, and many links at once, for
// its batched cache misses (see docs/edge.md).

// CountLinkKeys returns how many links the table holds, archived ones
// included: the edge sizes its filter with it.
func (s *Store) CountLinkKeys(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM links`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count link keys: %w", err)
	}
	return n, nil
}

// ScanLinkKeys calls fn with the domain and slug of every link, archived
// ones included, streamed in one statement (one snapshot of the table). The
// slices are only valid during the call.
func (s *Store) ScanLinkKeys(ctx context.Context, fn func(domain, slug []byte)) error {
	rows, err := s.db.QueryContext(ctx, `SELECT domain, slug FROM links`)
	if err != nil {
		return fmt.Errorf("scan link keys: %w", err)
	}
	defer rows.Close()
	var d, sl sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&d, &sl); err != nil {
			return fmt.Errorf("scan link keys: %w", err)
		}
		fn(d, sl)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("scan link keys: %w", err)
	}
	return nil
}

// MaxResolveLinks is the most keys one ResolveLinks reads.
const MaxResolveLinks = 256

// ResolveLinks returns, in one query, the links of the (domain, slug) keys
// that ResolveLink would return (on a custom domain, only while its own
// workspace has it verified), in no particular order; a key that has none is
// missing from the answer. It reads at most MaxResolveLinks keys.
func (s *Store) ResolveLinks(ctx context.Context, keys [][2]string) ([]*link.Link, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	if len(keys) > MaxResolveLinks {
		return nil, fmt.Errorf("resolve links: %d keys, at most %d", len(keys), MaxResolveLinks)
	}
	var q strings.Builder
	q.WriteString(`SELECT ` + linkColumns + ` FROM links WHERE (`)
	args := make([]any, 0, 2*len(keys))
	for i, k := range keys {
		if i > 0 {
			q.WriteString(" OR ")
		}
		n := len(args)
		q.WriteString("(domain = $" + strconv.Itoa(n+1) + " AND slug = $" + strconv.Itoa(n+2) + ")")
		args = append(args, k[0], k[1])
	}
	q.WriteString(`) AND (NOT EXISTS (SELECT 1 FROM domains d WHERE d.name = links.domain)
		OR EXISTS (SELECT 1 FROM domains d WHERE d.name = links.domain AND d.workspace_id = links.workspace_id AND d.verified = TRUE))`)
	rows, err := s.db.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("resolve links: %w", err)
	}
	defer rows.Close()
	var out []*link.Link
	for rows.Next() {
		l, err := scanLink(rows)
		if err != nil {
			return nil, fmt.Errorf("resolve links: %w", err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("resolve links: %w", err)
	}
	return out, nil
}
