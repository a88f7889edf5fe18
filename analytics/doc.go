// Package analytics consumes click events from the bus, stores them (SQLite
// embedded, ClickHouse at scale) and answers the link statistics.
//
// Package sqlite is the embedded backend and clickhouse the one at scale;
// statstest is the contract suite that every backend runs. clickhouse/chserver
// runs a ClickHouse server as a child process (tests, local deployment), and
// clickhouse/chtest gives tests one.
package analytics
