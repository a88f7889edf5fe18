package clickhouse

// StatesRead returns how many days' visitor states s's LinkStats read.
func StatesRead(s *Store) int64 { return s.statesRead.Load() }

// ResetVisitors empties the store's cache of visitor counts.
func ResetVisitors(s *Store) { s.visitors.Purge() }
