// Package clickhouse is the analytics backend at scale: click events in a
// ClickHouse table (clickhouse-go/v2 over the native protocol), the links'
// click counters written back to the control plane's PostgreSQL, and the link
// statistics answered from ClickHouse. The embedded SQLite backend implements
// the same; both pass the statstest contract suite.
//
// Statistics, the usage count and the counters come from rollups kept at
// write time (migration 0002): materialized views add every inserted human
// click to per-link-and-day counts, breakdowns and visitor states, so that no
// read scans the raw clicks of a link. See stats.go for what uniqueClicks
// means and how exact it is.
//
// The pipeline delivers clicks at least once. A redelivered event is caught
// three times over: within its batch, in a bounded set of the ids written
// recently, and by looking the batch's ids up in ClickHouse before inserting
// (in click_ids, ordered by id alone, so that the look-up reads a few
// thousand rows whatever the size of the table; migration 0003), so that the
// views, which add up what is inserted, see each event once. The look-up
// alone leaves open two processes inserting one event at the same instant,
// each before the other's INSERT is visible to its look-up: two consumers
// holding the same partition while the consumer group rebalances (the raw
// copies are collapsed by ReplacingMergeTree, but the rollups count that
// event twice; TestConsumerGroupRebalance measured 415 of 20,438 clicks
// so). The split deployment's consumers close it: they take turns on a
// partition (kafka.ConsumerOptions.Fence, PostgreSQL advisory locks held
// from before the store to after the commit), so the second finds the
// first's clicks stored. Without the fence, the gap stays for a writer
// that feeds WriteClicks otherwise.
//
// A server killed in the middle of an INSERT, which runs the views one
// after another, leaves some rollups fed and others not. Since migration
// 0007 the ids reach click_ids from the last view to run, so the batch is
// written again whole; on a cluster each replicated table drops the blocks
// of it that it has (insert deduplication, through the Null table
// clicks_in), so that it counts once; a single server counts the rollups
// it had fed twice (docs/analytics.md, "A replica killed inside an
// INSERT").
package clickhouse

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	lru "github.com/hashicorp/golang-lru/v2"

	"shortlink.dev/shared/counters"
	"shortlink.dev/shared/migration"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store stores click events and answers statistics on ClickHouse. It is safe
// for concurrent use.
type Store struct {
	conn driver.Conn
	// cluster is SHORTLINK_CLICKHOUSE_CLUSTER ("" on a single server), and
	// servers are connections to each of its servers, for the migrations'
	// statements (cluster.go).
	cluster  string
	database string
	servers  []driver.Conn
	counters counters.Store
	recent   *recentIDs
	// visitors caches the distinct visitors of links' days, which
	// LinkStats would otherwise read from their states again each time
	// (see visitorsKey).
	visitors *lru.Cache[visitorsKey, int64]
	// statesRead counts the days whose visitor states LinkStats read (each
	// pass over a day counts), for the tests of the cache.
	statesRead atomic.Int64
	// keyRowsRead counts the rows of keys Analytics read (for the tests).
	keyRowsRead atomic.Int64
	// sealedKept keeps the sums of sealed days read (sealedsums.go);
	// sealedKeptHits counts the blocks answered from it (for the tests).
	sealedKept     *sealedKept
	sealedKeptHits atomic.Int64

	// keysSince is the first day workspace_day_keys counts whole.
	keysSince time.Time
	// now is the clock (time.Now; the tests' own).
	now func() time.Time
	// The sealer (workspace.go): the workspaces whose days to seal, with
	// the range asked, and when each was last sealed.
	sealMu     sync.Mutex
	sealing    map[string][2]time.Time
	sealedAt   map[string]time.Time
	sealWake   chan struct{}
	sealStop   chan struct{}
	sealDone   chan struct{}
	closeOnce  sync.Once
	sealErrors atomic.Int64
	// daysSealed counts the finished workspace-days sealed, recentSealed
	// the seals of days not over (for the tests).
	daysSealed, recentSealed atomic.Int64
	// sealedRead, freshRead and tailRead count the days Analytics answered
	// from seals, from workspace_day_keys, and from a seal and its tail
	// (for the tests).
	sealedRead, freshRead, tailRead atomic.Int64
	// sealInline has Analytics seal a whole workspace's days before it
	// answers, rather than in the background (the tests').
	sealInline bool
}

// recentIDsKept is how many event ids WriteClicks remembers, so that a batch
// the bus redelivers to the same process is dropped without a look-up: three
// of the Kafka consumer's batches of 20,000, about 4 MB.
const recentIDsKept = 1 << 16

// databaseName is what Open accepts as a database name: it is written into
// CREATE DATABASE, which takes no parameters.
var databaseName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Open connects to the ClickHouse server named by url, a
// SHORTLINK_CLICKHOUSE_URL like clickhouse://127.0.0.1:9000/shortlink (the
// path is the database; user, password and settings as clickhouse-go's DSN
// takes them), creates the database when it is missing and applies the
// pending migrations, then counts into the rollups the clicks stored without
// them (fillLegacy), before it returns. counters is where WriteClicks writes
// the links' click counters back: the control plane's store.
func Open(ctx context.Context, url string, counters counters.Store) (*Store, error) {
	return OpenCluster(ctx, url, "", counters)
}

// OpenCluster is Open on the ClickHouse cluster named cluster (in the
// servers' remote_servers, SHORTLINK_CLICKHOUSE_CLUSTER): the tables are
// replicated and sharded (cluster.go), and the migrations are applied on
// every server of the cluster. The url names one or more of its servers
// (clickhouse://h1:9000,h2:9000/db), which the client tries in turn. An
// empty cluster is Open.
func OpenCluster(ctx context.Context, url, cluster string, counters counters.Store) (*Store, error) {
	if counters == nil {
		return nil, errors.New("cannot open ClickHouse: no link store for the click counters")
	}
	opts, err := ch.ParseDSN(url)
	if err != nil {
		return nil, fmt.Errorf("cannot open ClickHouse: invalid SHORTLINK_CLICKHOUSE_URL: %w", err)
	}
	if opts.Protocol != ch.Native {
		return nil, fmt.Errorf("cannot open ClickHouse: SHORTLINK_CLICKHOUSE_URL must be a clickhouse:// URL " +
			"of the native protocol port (9000), not an HTTP one")
	}
	database := opts.Auth.Database
	if database == "" {
		database = "default"
	}
	if !databaseName.MatchString(database) {
		return nil, fmt.Errorf("cannot open ClickHouse: invalid database name %q in SHORTLINK_CLICKHOUSE_URL: "+
			"use letters, digits and _", database)
	}
	where := strings.Join(opts.Addr, ",") + "/" + database
	var servers []driver.Conn
	if cluster != "" {
		if !databaseName.MatchString(cluster) {
			return nil, fmt.Errorf("cannot open ClickHouse: invalid cluster name %q in SHORTLINK_CLICKHOUSE_CLUSTER: "+
				"use letters, digits and _", cluster)
		}
		where += " (cluster " + cluster + ")"
		if servers, err = clusterServers(ctx, *opts, cluster, database); err != nil {
			return nil, fmt.Errorf("cannot open ClickHouse %s: %w", where, err)
		}
		if opts.Settings == nil {
			opts.Settings = ch.Settings{}
		}
		for k, v := range clusterSettings {
			if _, set := opts.Settings[k]; !set {
				opts.Settings[k] = v
			}
		}
	} else if err := createDatabase(ctx, *opts, database); err != nil {
		return nil, fmt.Errorf("cannot open ClickHouse %s: %w", where, err)
	}
	closeServers := func() {
		for _, c := range servers {
			c.Close()
		}
	}
	conn, err := ch.Open(opts)
	if err != nil {
		closeServers()
		return nil, fmt.Errorf("cannot open ClickHouse %s: %w", where, err)
	}
	visitors, err := lru.New[visitorsKey, int64](visitorsCached)
	if err != nil {
		conn.Close()
		closeServers()
		return nil, fmt.Errorf("cannot open ClickHouse %s: %w", where, err)
	}
	s := &Store{conn: conn, cluster: cluster, database: database, servers: servers, counters: counters, recent: newRecentIDs(recentIDsKept), visitors: visitors, sealedKept: newSealedKept(),
		now: time.Now, sealing: map[string][2]time.Time{}, sealedAt: map[string]time.Time{},
		sealWake: make(chan struct{}, 1), sealStop: make(chan struct{}), sealDone: make(chan struct{})}
	err = s.migrate(ctx)
	// The connections to each server serve the migrations only.
	closeServers()
	s.servers = nil
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("cannot open ClickHouse %s: %w", where, err)
	}
	// A cluster's schema is created whole by this version or a later one,
	// whose writers mark every click rolled and dims (see cluster.go): it
	// holds no click for fillLegacy and fillDims to count, and they read
	// the parts of clicks, which a Distributed table has not.
	if cluster != "" {
		if s.keysSince, err = s.readKeysSince(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("cannot open ClickHouse %s: %w", where, err)
		}
		go s.sealLoop()
		return s, nil
	}
	if err := s.fillLegacy(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("cannot open ClickHouse %s: %w", where, err)
	}
	if err := s.fillDims(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("cannot open ClickHouse %s: %w", where, err)
	}
	if s.keysSince, err = s.readKeysSince(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("cannot open ClickHouse %s: %w", where, err)
	}
	go s.sealLoop()
	return s, nil
}

// createDatabase creates the database, over a connection to the server's
// default one: a connection to a missing database fails its handshake.
func createDatabase(ctx context.Context, opts ch.Options, database string) error {
	opts.Auth.Database = ""
	opts.MaxOpenConns, opts.MaxIdleConns = 1, 1
	conn, err := ch.Open(&opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.Ping(ctx); err != nil {
		return fmt.Errorf("cannot reach the server: %w", err)
	}
	if err := conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS `"+database+"`"); err != nil {
		return fmt.Errorf("cannot create database %s: %w", database, err)
	}
	return nil
}

// Close stops the sealer, waiting for a seal under way to stop, and closes
// the connections.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.sealMu.Lock()
		s.sealing = nil
		s.sealMu.Unlock()
		close(s.sealStop)
		<-s.sealDone
	})
	return s.conn.Close()
}

// Ping reports whether ClickHouse answers.
func (s *Store) Ping(ctx context.Context) error { return s.conn.Ping(ctx) }

// migrate applies the embedded migrations whose version analytics_migrations
// does not record yet, in order, and records each after its last statement
// (and its step in Go, if it has one: migrationSteps).
// ClickHouse has neither transactions nor locks: the statements are written
// to be run again (IF NOT EXISTS), so a migration cut short is simply run
// again whole, and two processes starting together both run it harmlessly.
func (s *Store) migrate(ctx context.Context) error {
	if s.cluster != "" {
		return s.migrateCluster(ctx)
	}
	if err := s.conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS analytics_migrations (
		version UInt32, applied_at DateTime) ENGINE = MergeTree() ORDER BY version`); err != nil {
		return fmt.Errorf("cannot create analytics_migrations: %w", err)
	}
	applied, err := s.appliedMigrations(ctx, s.conn)
	if err != nil {
		return err
	}
	files, err := migration.Load(migrations, "migrations")
	if err != nil {
		return err
	}
	for _, m := range files {
		if applied[uint32(m.Version)] {
			continue
		}
		for _, stmt := range m.Statements {
			if err := s.conn.Exec(ctx, stmt); err != nil && !columnExists(err, stmt) {
				return fmt.Errorf("cannot apply analytics migration %s: %w\n%s", m.Name, err, stmt)
			}
		}
		if step := migrationSteps[m.Version]; step != nil {
			if err := step(s, ctx); err != nil {
				return fmt.Errorf("cannot apply analytics migration %s: %w", m.Name, err)
			}
		}
		if err := s.record(ctx, s.conn, uint32(m.Version)); err != nil {
			return fmt.Errorf("cannot record analytics migration %s: %w", m.Name, err)
		}
	}
	return nil
}

// migrationSteps are the parts of migrations written in Go, run after the
// migration's statements and before it is recorded: like the statements,
// they must be safe to run again, and twice at once.
var migrationSteps = map[int]func(*Store, context.Context) error{
	3: (*Store).copyClickIDs,
	5: (*Store).fillWorkspaceLinks,
}

// errColumnExists is ClickHouse's error code for ADD COLUMN of a column that
// exists (ILLEGAL_COLUMN).
const errColumnExists = 44

// columnExists reports whether err is an ALTER TABLE … ADD COLUMN's failure
// because the column is there already: a migration run again, as 18.16 has
// no ADD COLUMN IF NOT EXISTS.
func columnExists(err error, stmt string) bool {
	var e *ch.Exception
	return errors.As(err, &e) && e.Code == errColumnExists && strings.Contains(stmt, "ADD COLUMN")
}

// record records a migration as applied. It sends the row as a batch: over
// the native protocol, ClickHouse 18.16 waits for the rows of an INSERT …
// VALUES from the client instead of reading them from the query.
func (s *Store) record(ctx context.Context, conn driver.Conn, version uint32) error {
	batch, err := conn.PrepareBatch(ctx, `INSERT INTO analytics_migrations (version, applied_at)`)
	if err != nil {
		return err
	}
	defer batch.Close()
	if err := batch.Append(version, time.Now().UTC()); err != nil {
		return err
	}
	return batch.Send()
}

func (s *Store) appliedMigrations(ctx context.Context, conn driver.Conn) (map[uint32]bool, error) {
	rows, err := conn.Query(ctx, `SELECT DISTINCT version FROM analytics_migrations`)
	if err != nil {
		return nil, fmt.Errorf("cannot read analytics_migrations: %w", err)
	}
	defer rows.Close()
	applied := map[uint32]bool{}
	for rows.Next() {
		var v uint32
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("cannot read analytics_migrations: %w", err)
		}
		applied[v] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot read analytics_migrations: %w", err)
	}
	return applied, nil
}
