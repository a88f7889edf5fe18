package main

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"shortlink.dev/benchmarks/internal/proc"
)

// pgCounters are pg_stat_database's counters of one database.
type pgCounters struct {
	Xacts, Rollbacks           int64
	BlksRead, BlksHit          int64
	Returned, Fetched          int64
	Inserted, Updated, Deleted int64
	ActiveMS                   float64 // time spent running statements (PostgreSQL 14+)
}

// sub is c − o, counter by counter.
func (c pgCounters) sub(o pgCounters) pgCounters {
	return pgCounters{
		Xacts: c.Xacts - o.Xacts, Rollbacks: c.Rollbacks - o.Rollbacks,
		BlksRead: c.BlksRead - o.BlksRead, BlksHit: c.BlksHit - o.BlksHit,
		Returned: c.Returned - o.Returned, Fetched: c.Fetched - o.Fetched,
		Inserted: c.Inserted - o.Inserted, Updated: c.Updated - o.Updated, Deleted: c.Deleted - o.Deleted,
		ActiveMS: c.ActiveMS - o.ActiveMS,
	}
}

// Written are the rows inserted, updated and deleted.
func (c pgCounters) Written() int64 { return c.Inserted + c.Updated + c.Deleted }

// pgLoad is what the database did over a measured phase.
type pgLoad struct {
	pgCounters
	// CPU is the utime+stime of the database's backends over the phase.
	CPU time.Duration
	// Backends are the backends seen.
	Backends int
}

// pgMeter watches one database of a PostgreSQL server from a connection
// to another database of it (so that its own queries are not counted).
type pgMeter struct {
	conn  *pgx.Conn
	db    string
	wait  time.Duration
	local bool // the server runs on this machine: its backends' /proc is readable
}

// adminURL is databaseURL with its database replaced by postgres.
func adminURL(databaseURL string) (string, string, error) {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return "", "", err
	}
	db := u.Path
	if len(db) > 0 && db[0] == '/' {
		db = db[1:]
	}
	if db == "" {
		return "", "", fmt.Errorf("%s names no database", databaseURL)
	}
	u.Path = "/postgres"
	return u.String(), db, nil
}

func newPGMeter(ctx context.Context, databaseURL string, wait time.Duration) (*pgMeter, error) {
	admin, db, err := adminURL(databaseURL)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL (%s): %w", admin, err)
	}
	m := &pgMeter{conn: conn, db: db, wait: wait}
	var addr string
	if err := conn.QueryRow(ctx, `SELECT coalesce(host(inet_server_addr()), '')`).Scan(&addr); err == nil {
		m.local = addr == "" || addr == "127.0.0.1" || addr == "::1"
	}
	return m, nil
}

func (m *pgMeter) close() { m.conn.Close(context.Background()) } //nolint:errcheck // cleanup

func (m *pgMeter) counters(ctx context.Context) (pgCounters, error) {
	var c pgCounters
	err := m.conn.QueryRow(ctx, `SELECT xact_commit, xact_rollback, blks_read, blks_hit, tup_returned, tup_fetched,
		tup_inserted, tup_updated, tup_deleted, coalesce(active_time, 0) FROM pg_stat_database WHERE datname = $1`, m.db).
		Scan(&c.Xacts, &c.Rollbacks, &c.BlksRead, &c.BlksHit, &c.Returned, &c.Fetched, &c.Inserted, &c.Updated, &c.Deleted, &c.ActiveMS)
	return c, err
}

// pgRun is one measured phase.
type pgRun struct {
	m     *pgMeter
	start time.Time
	base  pgCounters
	cpu   *backendCPU
	stop  chan struct{}
	done  chan struct{}
}

// begin waits for the counters of earlier work to be reported, reads them,
// and starts polling the database's backends.
func (m *pgMeter) begin(ctx context.Context) (*pgRun, error) {
	time.Sleep(m.wait)
	r := &pgRun{m: m, start: time.Now(), cpu: newBackendCPU(), stop: make(chan struct{}), done: make(chan struct{})}
	var err error
	if r.base, err = m.counters(ctx); err != nil {
		return nil, err
	}
	if err := r.poll(ctx, true); err != nil {
		return nil, err
	}
	go func() {
		defer close(r.done)
		for {
			select {
			case <-r.stop:
				return
			case <-time.After(200 * time.Millisecond):
				r.poll(ctx, false) //nolint:errcheck // a failed poll loses one sample
			}
		}
	}()
	return r, nil
}

// poll reads the CPU time of every backend of the database.
func (r *pgRun) poll(ctx context.Context, first bool) error {
	if !r.m.local {
		return nil
	}
	rows, err := r.m.conn.Query(ctx, `SELECT pid, backend_start FROM pg_stat_activity WHERE datname = $1`, r.m.db)
	if err != nil {
		return err
	}
	type backend struct {
		pid   int
		start time.Time
	}
	var bs []backend
	for rows.Next() {
		var b backend
		if err := rows.Scan(&b.pid, &b.start); err != nil {
			rows.Close()
			return err
		}
		bs = append(bs, b)
	}
	rows.Close()
	for _, b := range bs {
		cpu, err := proc.CPU(b.pid)
		if err != nil {
			continue // gone since
		}
		r.cpu.see(b.pid, cpu, !first && b.start.After(r.start))
	}
	return rows.Err()
}

// end stops polling, waits for the phase's counters to be reported, and
// returns what the database did since begin.
func (r *pgRun) end(ctx context.Context) (pgLoad, error) {
	close(r.stop)
	<-r.done
	r.poll(ctx, false) //nolint:errcheck // the goroutine's samples stand
	time.Sleep(r.m.wait)
	c, err := r.m.counters(ctx)
	if err != nil {
		return pgLoad{}, err
	}
	return pgLoad{pgCounters: c.sub(r.base), CPU: r.cpu.total(), Backends: r.cpu.count()}, nil
}

// backendCPU keeps, per backend pid, the CPU time at its first and last
// sighting: a backend that started during the phase counts from 0.
type backendCPU struct {
	mu          sync.Mutex
	first, last map[int]time.Duration
}

func newBackendCPU() *backendCPU {
	return &backendCPU{first: map[int]time.Duration{}, last: map[int]time.Duration{}}
}

// see records a reading of pid's CPU time; born says the backend started
// after the phase did (all its CPU is the phase's).
func (b *backendCPU) see(pid int, cpu time.Duration, born bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.first[pid]; !ok {
		if born {
			b.first[pid] = 0
		} else {
			b.first[pid] = cpu
		}
	}
	if cpu >= b.last[pid] {
		b.last[pid] = cpu
	}
}

// total is the CPU the backends used between their first and last readings.
func (b *backendCPU) total() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	var t time.Duration
	for pid, f := range b.first {
		t += max(b.last[pid]-f, 0)
	}
	return t
}

func (b *backendCPU) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.first)
}
