// Package edge is the redirector: a fasthttp server that resolves host and slug
// to a link, chooses its target and emits a click event for every visit.
//
// The redirector arrives with issue 3; until then the module holds only this
// package so that the workspace layout of ARCHITECTURE.md is in place.
package edge
