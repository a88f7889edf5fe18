// Package redirecttest holds what the edge's tests and benchmarks share (the
// handler's benchmarks in edge/redirect, benchmarks/cmd/edgebench): an
// in-memory link source and the one link the benchmarks redirect.
package redirecttest

import (
	"context"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/gallery"
	"shortlink.dev/shared/link"
)

// Source is a redirect.Source serving links from a map keyed by
// "domain/slug": a benchmark measures the edge, not a store. It has no
// galleries and no verified domains, and charges every click.
type Source map[string]*link.Link

// ResolveLink implements redirect.Source.
func (m Source) ResolveLink(_ context.Context, domain, slug string) (*link.Link, error) {
	if l, ok := m[domain+"/"+slug]; ok {
		return l, nil
	}
	return nil, fault.NotFoundf("link")
}

// ResolveGallery implements redirect.Source: there are none.
func (m Source) ResolveGallery(context.Context, string, string) (*gallery.Gallery, error) {
	return nil, fault.NotFoundf("gallery")
}

// IsVerifiedDomain implements redirect.Source: none is.
func (m Source) IsVerifiedDomain(context.Context, string) (bool, error) { return false, nil }

// ChargeClick implements redirect.Source: every click is charged.
func (m Source) ChargeClick(context.Context, string) (bool, error) { return true, nil }

// ClickLimitReached implements redirect.Source: never.
func (m Source) ClickLimitReached(context.Context, string) (bool, error) { return false, nil }

// The benchmarks' link: BenchDomain/BenchSlug redirects to BenchTarget.
// BenchDomain is the default domain of an empty config.
const (
	BenchDomain = "localhost:8081"
	BenchSlug   = "bench"
	BenchTarget = "https://example.com/landing?a=1"
)

// BenchSource returns a Source holding the benchmarks' link alone.
func BenchSource() Source {
	return Source{BenchDomain + "/" + BenchSlug: {
		ID: "lnk_bench", WorkspaceID: "ws_bench", Domain: BenchDomain, Slug: BenchSlug,
		DestinationURL: BenchTarget, Tags: []string{},
	}}
}
