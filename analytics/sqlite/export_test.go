package sqlite

import "time"

// SetNamedAlone sets the most links that Analytics reads from their own
// rows rather than from click_workspace_links (0: none, every named
// query of a workspace reads click_workspace_links).
func SetNamedAlone(s *Store, n int) { s.namedAlone = n }

// LinksQuery is the statement linksAnalytics reads click_workspace_links with.
const LinksQuery = linksQuery

// SetAnalyticsCache replaces the store's kept sums of closed days with an
// empty cache of about limit bytes; 0: none, every day is read.
func SetAnalyticsCache(s *Store, limit int) {
	s.cache = nil
	if limit > 0 {
		s.cache = newAnCache(limit)
	}
}

// SetNow sets the clock the store closes days by.
func SetNow(s *Store, now func() time.Time) { s.now = now }

// AnalyticsCacheStats returns the look-ups of kept sums: found valid,
// not found, found with another day's clicks (dropped).
func AnalyticsCacheStats(s *Store) (hits, misses, stale int) {
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	return s.cache.hits, s.cache.misses, s.cache.stale
}

// Blocks is blocks: the days first to last as aligned blocks.
func Blocks(first, last int) [][2]int { return blocks(first, last) }

// DaysRead returns how many days workspace queries have read rather than
// taken from kept sums.
func DaysRead(s *Store) int64 { return s.daysRead.Load() }
