// Package shared is the common language of the short-link platform: the domain
// types (links, workspaces, API keys), the spec's error codes, ids, settings, the
// store interfaces and their SQL implementation that every plane uses.
//
// The planes (edge, controlplane, analytics) import shared and never each other.
package shared
