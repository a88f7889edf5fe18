package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	ch "github.com/ClickHouse/clickhouse-go/v2"
)

// rawTables are the ClickHouse tables with a row per click (analytics/
// clickhouse/migrations): the events, the workspace's copy for the usage
// count, and the ids WriteClicks looks a batch up in. Every other table
// with rows is a rollup.
var rawTables = []string{"clicks", "workspace_clicks", "click_ids"}

// chTable is what system.parts says of a table's active parts.
type chTable struct {
	Name                     string
	Parts, Rows              uint64
	OnDisk                   uint64 // bytes on disk: compressed columns, marks, checksums and the primary index
	Compressed, Uncompressed uint64 // the columns' data
}

// Raw says whether the table has a row per click.
func (t chTable) Raw() bool { return slices.Contains(rawTables, t.Name) }

// chColumn is what system.columns says of a column's data.
type chColumn struct {
	Name                     string
	Compressed, Uncompressed uint64
}

// partsQuery is the query of system.parts for the columns the server has:
// 18.16 (Debian's) names the bytes on disk "bytes" (bytes_on_disk came with
// 19.x, which keeps "bytes" as an alias only for a while), and may lack the
// compressed and uncompressed sizes (then read from system.columns).
func partsQuery(have map[string]bool) (string, bool) {
	onDisk := "bytes_on_disk"
	if !have[onDisk] {
		onDisk = "bytes"
	}
	sizes := have["data_compressed_bytes"] && have["data_uncompressed_bytes"]
	cols := "toUInt64(0), toUInt64(0)"
	if sizes {
		cols = "sum(data_compressed_bytes), sum(data_uncompressed_bytes)"
	}
	return fmt.Sprintf(`SELECT table, toUInt64(count()), toUInt64(sum(rows)), toUInt64(sum(%s)), %s
FROM system.parts WHERE database = ? AND active GROUP BY table ORDER BY table`, onDisk, cols), sizes
}

// systemColumns are the columns a system table has.
func systemColumns(ctx context.Context, conn ch.Conn, table string) (map[string]bool, error) {
	rows, err := conn.Query(ctx, `SELECT name FROM system.columns WHERE database = 'system' AND table = ?`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		have[n] = true
	}
	return have, rows.Err()
}

// tablesOnDisk reads the active parts of every table of db.
func tablesOnDisk(ctx context.Context, conn ch.Conn, db string) ([]chTable, error) {
	have, err := systemColumns(ctx, conn, "parts")
	if err != nil {
		return nil, err
	}
	q, sizes := partsQuery(have)
	rows, err := conn.Query(ctx, q, db)
	if err != nil {
		return nil, fmt.Errorf("system.parts: %w", err)
	}
	var ts []chTable
	for rows.Next() {
		var t chTable
		if err := rows.Scan(&t.Name, &t.Parts, &t.Rows, &t.OnDisk, &t.Compressed, &t.Uncompressed); err != nil {
			rows.Close()
			return nil, err
		}
		ts = append(ts, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if !sizes {
		for i := range ts {
			cs, err := columnsOnDisk(ctx, conn, db, ts[i].Name)
			if err != nil {
				return nil, err
			}
			for _, c := range cs {
				ts[i].Compressed += c.Compressed
				ts[i].Uncompressed += c.Uncompressed
			}
		}
	}
	return ts, nil
}

// columnsOnDisk reads a table's columns' sizes, largest first.
func columnsOnDisk(ctx context.Context, conn ch.Conn, db, table string) ([]chColumn, error) {
	rows, err := conn.Query(ctx, `SELECT name, toUInt64(data_compressed_bytes), toUInt64(data_uncompressed_bytes)
FROM system.columns WHERE database = ? AND table = ? ORDER BY data_compressed_bytes DESC, name`, db, table)
	if err != nil {
		return nil, fmt.Errorf("system.columns: %w", err)
	}
	defer rows.Close()
	var cs []chColumn
	for rows.Next() {
		var c chColumn
		if err := rows.Scan(&c.Name, &c.Compressed, &c.Uncompressed); err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, rows.Err()
}

// diskTotals sums the raw tables and the rollups.
func diskTotals(ts []chTable) (raw, rollups chTable) {
	raw.Name, rollups.Name = "raw (a row per click)", "rollups"
	for _, t := range ts {
		x := &rollups
		if t.Raw() {
			x = &raw
		}
		x.Parts += t.Parts
		x.Rows += t.Rows
		x.OnDisk += t.OnDisk
		x.Compressed += t.Compressed
		x.Uncompressed += t.Uncompressed
	}
	return raw, rollups
}

// perClick is n ÷ clicks.
func perClick(n uint64, clicks int64) float64 {
	if clicks <= 0 {
		return 0
	}
	return float64(n) / float64(clicks)
}

// chDatabase is the database of a clickhouse:// URL ("shortlink" when none).
func chDatabase(url string) string {
	_, rest, _ := strings.Cut(url, "://")
	_, db, ok := strings.Cut(rest, "/")
	if !ok || db == "" {
		return "shortlink"
	}
	db, _, _ = strings.Cut(db, "?")
	return db
}
