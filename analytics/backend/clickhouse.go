package backend

import (
	"context"

	"shortlink.dev/analytics/clickhouse"
	"shortlink.dev/shared/sqlstore"
)

// openClickHouse opens the ClickHouse click store; link counters go back to st.
func openClickHouse(ctx context.Context, url string, st *sqlstore.Store) (Store, error) {
	return clickhouse.Open(ctx, url, st)
}
