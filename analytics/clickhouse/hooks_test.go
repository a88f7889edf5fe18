package clickhouse

// StatesRead returns how many days' visitor states s's LinkStats read.
func StatesRead(s *Store) int64 { return s.statesRead.Load() }

// ResetVisitors empties the store's cache of visitor counts.
func ResetVisitors(s *Store) { s.visitors.Purge() }

// SetQueryBounds sets how many links and link-days one query of Analytics
// names, and returns a function that restores them.
func SetQueryBounds(links, pairs int) (restore func()) {
	l, p := linksPerQuery, pairsPerQuery
	linksPerQuery, pairsPerQuery = links, pairs
	return func() { linksPerQuery, pairsPerQuery = l, p }
}

// KeyRowsRead returns how many rows of keys s's Analytics read.
func KeyRowsRead(s *Store) int64 { return s.keyRowsRead.Load() }
