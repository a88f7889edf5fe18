package sqlite

// SetNamedAlone sets the most links that Analytics reads from their own
// rows rather than from click_workspace_links (0: none, every named
// query of a workspace reads click_workspace_links).
func SetNamedAlone(s *Store, n int) { s.namedAlone = n }

// LinksQuery is the statement linksAnalytics reads click_workspace_links with.
const LinksQuery = linksQuery
