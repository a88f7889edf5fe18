package clickhouse

import "time"

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

// SetSealInline has s's Analytics seal a whole workspace's finished days
// before it answers (on), and never in the background.
func SetSealInline(s *Store, on bool) { s.sealInline = on }

// StopSealing keeps s from sealing in the background.
func StopSealing(s *Store) {
	s.sealMu.Lock()
	s.sealing = nil
	s.sealMu.Unlock()
}

// SetKeysSince sets the first day s reads from workspace_day_keys.
func SetKeysSince(s *Store, day time.Time) { s.keysSince = day }

// DaysSealed returns how many workspace-days s sealed.
func DaysSealed(s *Store) int64 { return s.daysSealed.Load() }

// SealedDaysRead returns how many days s's Analytics answered from seals.
func SealedDaysRead(s *Store) int64 { return s.sealedRead.Load() }

// FreshDaysRead returns how many days s's Analytics read from
// workspace_day_keys.
func FreshDaysRead(s *Store) int64 { return s.freshRead.Load() }

// SetNamedAlone sets how many links named are read from their own
// rollups, and returns a function that restores it.
func SetNamedAlone(n int) (restore func()) {
	old := namedAlone
	namedAlone = n
	return func() { namedAlone = old }
}

// RecentSealed returns how many seals of days not over s wrote.
func RecentSealed(s *Store) int64 { return s.recentSealed.Load() }

// TailDaysRead returns how many days s's Analytics answered from a seal
// and the links clicked since.
func TailDaysRead(s *Store) int64 { return s.tailRead.Load() }

// SetMaxTailLinks sets how many links clicked since its seal a recent day
// reads beside the seal, and returns a function that restores it.
func SetMaxTailLinks(n int) (restore func()) {
	old := maxTailLinks
	maxTailLinks = n
	return func() { maxTailLinks = old }
}

// SetCopyLinks sets how many links named at most read a dimension from
// workspace_link_shares, and returns a function that restores it.
func SetCopyLinks(n int) (restore func()) {
	old := copyLinks
	copyLinks = n
	return func() { copyLinks = old }
}

// SealedKeptHits returns how many blocks of sealed days s answered from
// the sums it kept (sealedsums.go).
func SealedKeptHits(s *Store) int64 { return s.sealedKeptHits.Load() }

// SetSealedKeptBytes sets the bound of the kept sums of sealed days; the
// returned function restores it.
func SetSealedKeptBytes(n int) func() {
	old := sealedKeptBytes
	sealedKeptBytes = n
	return func() { sealedKeptBytes = old }
}

// SealedKeptBytes returns the bytes of the sums s keeps.
func SealedKeptBytes(s *Store) int {
	s.sealedKept.mu.Lock()
	defer s.sealedKept.mu.Unlock()
	return s.sealedKept.bytes
}
