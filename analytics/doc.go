// Package analytics consumes click events from the bus, stores them (SQLite
// embedded, ClickHouse at scale) and answers the link statistics.
//
// Package sqlite is the embedded backend; statstest is the contract suite that
// every backend runs.
package analytics
