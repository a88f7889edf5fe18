package clickhouse

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"shortlink.dev/shared/migration"
)

// A cluster (SHORTLINK_CLICKHOUSE_CLUSTER, a cluster of the servers'
// remote_servers) holds every table of the migrations twice over on each
// server: its rows in <table>_local, of the Replicated form of the table's
// engine (ReplicatedMergeTree over ZooKeeper, a copy on each replica of a
// shard), and a Distributed table under the table's own name that reads
// every shard and writes each row to one. The Store's queries name the
// Distributed tables, so they are the single server's text unchanged; the
// materialized views run on each server, from clicks_local into the
// rollups' local tables: a click's rollups are on its shard.
//
// The migrations are written once, for a single server: clusterStatements
// derives the cluster's statements from them (one source of truth).

// clusterSettings are the settings of every query on a cluster:
// insert_distributed_sync has an INSERT into a Distributed table return once
// each shard's replica stored its rows (not once they are queued on the
// server the client talks to), so that a read that follows sees them, and a
// failed INSERT is an error the bus retries. insert_deduplicate 1 (the
// default, sent to be explicit) has each replicated table drop a block it
// stored already: a batch whose INSERT died with its replica, inserted
// again, adds to each rollup only what the first INSERT did not (migration
// 0007: the views' rows carry their clicks' fingerprint, and each INSERT
// into clicks a number of its own, so that its block is never dropped and
// its views always run). docs/analytics.md ("ClickHouse as a cluster").
//
// Two more must be in the servers' default profile, as the client cannot
// send a setting that is not a number to 18.16 (chserver.ClusterProfile
// writes them): load_balancing in_order, so that the reads and the writes
// of a shard go to its first live replica, the same one, and a read sees
// what was just written there even before the other replica copied it; and
// distributed_product_mode global, so that a subquery over a Distributed
// table inside a query of one is run once and its result sent to the
// shards.
var clusterSettings = ch.Settings{
	"insert_distributed_sync": 1,
	"insert_deduplicate":      1,
}

var (
	createTable = regexp.MustCompile(`(?s)^\s*CREATE\s+TABLE\s+IF\s+NOT\s+EXISTS\s+(\w+)\s*\((.*)\)\s*ENGINE\s*=\s*(\w+)\(([^)]*)\)(.*)$`)
	createView  = regexp.MustCompile(`(?s)^\s*CREATE\s+MATERIALIZED\s+VIEW\s+IF\s+NOT\s+EXISTS\s+(\w+)\s+TO\s+(\w+)\s+AS\s+(.*)$`)
	alterTable  = regexp.MustCompile(`(?s)^\s*ALTER\s+TABLE\s+(\w+)\s+(.*)$`)
	dropView    = regexp.MustCompile(`^\s*DROP\s+TABLE\s+IF\s+EXISTS\s+(\w+_feed)\s*$`)
	fromTable   = regexp.MustCompile(`\bFROM\s+(\w+)\b`)
	columnName  = regexp.MustCompile(`(?m)^\s*(\w+)\s`)
)

// clusterStatements returns the statements that apply stmt, a statement of
// the migrations, to each server of cluster, for the tables of database:
//
//   - CREATE TABLE t (…) ENGINE = E(args) …: t_local, ENGINE =
//     ReplicatedE('/clickhouse/tables/{shard}/<database>/t', '{replica}',
//     args) …, and t AS t_local ENGINE = Distributed(cluster, database,
//     t_local, key), whose key shards the rows written through it (a Null
//     table, which keeps nothing, stays Null in t_local): by link
//     when the table has link_id (a link's rows, and its rollups, on one
//     shard), else by workspace, else by id, else at random;
//   - CREATE MATERIALIZED VIEW v TO t AS SELECT … FROM s: the view reads
//     s_local and writes t_local, on each server;
//   - ALTER TABLE t …: on t_local and on t;
//   - DROP TABLE IF EXISTS v, of a view (a name ending in _feed): the same,
//     as a view has no Distributed twin.
func clusterStatements(stmt, database, cluster string) ([]string, error) {
	if m := createTable.FindStringSubmatch(stmt); m != nil {
		name, cols, engine, args, rest := m[1], m[2], m[3], strings.TrimSpace(m[4]), m[5]
		var local string
		switch {
		case engine == "Null":
			local = "Null()"
		case strings.HasSuffix(engine, "MergeTree"):
			replicated := "'/clickhouse/tables/{shard}/" + database + "/" + name + "', '{replica}'"
			if args != "" {
				replicated += ", " + args
			}
			local = "Replicated" + engine + "(" + replicated + ")"
		default:
			return nil, fmt.Errorf("no cluster form of the engine %s of %s", engine, name)
		}
		key := "rand()"
		columns := map[string]bool{}
		for _, c := range columnName.FindAllStringSubmatch(cols, -1) {
			columns[c[1]] = true
		}
		for _, c := range []string{"link_id", "workspace_id", "id"} {
			if columns[c] {
				key = "cityHash64(" + c + ")"
				break
			}
		}
		return []string{
			"CREATE TABLE IF NOT EXISTS " + name + "_local (" + cols + ") ENGINE = " + local + rest,
			"CREATE TABLE IF NOT EXISTS " + name + " AS " + name + "_local ENGINE = Distributed(" +
				cluster + ", " + database + ", " + name + "_local, " + key + ")",
		}, nil
	}
	if m := createView.FindStringSubmatch(stmt); m != nil {
		sel := fromTable.ReplaceAllString(m[3], "FROM ${1}_local")
		return []string{"CREATE MATERIALIZED VIEW IF NOT EXISTS " + m[1] + " TO " + m[2] + "_local AS " + sel}, nil
	}
	if m := alterTable.FindStringSubmatch(stmt); m != nil {
		return []string{"ALTER TABLE " + m[1] + "_local " + m[2], "ALTER TABLE " + m[1] + " " + m[2]}, nil
	}
	if m := dropView.FindStringSubmatch(stmt); m != nil {
		return []string{"DROP TABLE IF EXISTS " + m[1]}, nil
	}
	return nil, fmt.Errorf("no cluster form of the statement:\n%s", stmt)
}

// clusterServers returns connections to every server of the cluster, as
// the server opts names lists them in system.clusters, with opts's
// credentials, to database, which it creates on each server.
func clusterServers(ctx context.Context, opts ch.Options, cluster, database string) ([]driver.Conn, error) {
	first := opts
	first.Auth.Database = ""
	first.MaxOpenConns, first.MaxIdleConns = 1, 1
	conn, err := ch.Open(&first)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	rows, err := conn.Query(ctx, `SELECT host_address, toUInt16(port) FROM system.clusters
		WHERE cluster = ? ORDER BY shard_num, replica_num`, cluster)
	if err != nil {
		return nil, fmt.Errorf("cannot read the servers of cluster %s: %w", cluster, err)
	}
	var addrs []string
	for rows.Next() {
		var host string
		var port uint16
		if err := rows.Scan(&host, &port); err != nil {
			rows.Close()
			return nil, fmt.Errorf("cannot read the servers of cluster %s: %w", cluster, err)
		}
		addrs = append(addrs, net.JoinHostPort(host, strconv.Itoa(int(port))))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot read the servers of cluster %s: %w", cluster, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("the server knows no cluster %s (remote_servers in its config)", cluster)
	}
	var conns []driver.Conn
	for _, a := range addrs {
		o := opts
		o.Addr = []string{a}
		o.MaxOpenConns, o.MaxIdleConns = 2, 1
		err := createDatabase(ctx, o, database)
		var c driver.Conn
		if err == nil {
			c, err = ch.Open(&o)
		}
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			return nil, fmt.Errorf("cannot reach server %s of cluster %s: %w", a, cluster, err)
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// migrateCluster is migrate on a cluster: each server records the
// migrations applied to it in its own analytics_migrations (a local
// table), and a migration is applied, its statements in their cluster
// form (clusterStatements) on every server in turn, until every server
// records it. As on a single server, every statement can be run again; a
// replicated ALTER run on the second replica of a shard finds the column
// there already. The steps in Go run once, through the Distributed tables.
func (s *Store) migrateCluster(ctx context.Context) error {
	applied := map[uint32]int{}
	for _, conn := range s.servers {
		if err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS analytics_migrations (
			version UInt32, applied_at DateTime) ENGINE = MergeTree() ORDER BY version`); err != nil {
			return fmt.Errorf("cannot create analytics_migrations: %w", err)
		}
		on, err := s.appliedMigrations(ctx, conn)
		if err != nil {
			return err
		}
		for v := range on {
			applied[v]++
		}
	}
	files, err := migration.Load(migrations, "migrations")
	if err != nil {
		return err
	}
	for _, m := range files {
		if applied[uint32(m.Version)] == len(s.servers) {
			continue
		}
		for _, stmt := range m.Statements {
			stmts, err := clusterStatements(stmt, s.database, s.cluster)
			if err != nil {
				return fmt.Errorf("cannot apply analytics migration %s: %w", m.Name, err)
			}
			for _, cs := range stmts {
				for i, conn := range s.servers {
					if err := conn.Exec(ctx, cs); err != nil && !columnExists(err, cs) {
						return fmt.Errorf("cannot apply analytics migration %s on server %d of cluster %s: %w\n%s",
							m.Name, i+1, s.cluster, err, cs)
					}
				}
			}
		}
		if step := migrationSteps[m.Version]; step != nil {
			if err := step(s, ctx); err != nil {
				return fmt.Errorf("cannot apply analytics migration %s: %w", m.Name, err)
			}
		}
		for _, conn := range s.servers {
			if err := s.record(ctx, conn, uint32(m.Version)); err != nil {
				return fmt.Errorf("cannot record analytics migration %s: %w", m.Name, err)
			}
		}
	}
	return nil
}
