// Package analytics consumes click events from the bus, stores them (SQLite
// embedded, ClickHouse at scale) and answers the link statistics.
//
// The click pipeline arrives with issue 3; until then the module holds only this
// package so that the workspace layout of ARCHITECTURE.md is in place.
package analytics
