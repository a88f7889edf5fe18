// Package bus carries what the planes tell each other: click events from the
// edges to the analytics consumer, and link changes from the control plane to
// every edge's cache. Memory is the in-process bus of the standalone binary;
// Kafka implements the same interfaces at scale.
package bus

import (
	"context"

	"shortlink.dev/shared/click"
)

// ClickProducer takes click events from the edge. Offer never blocks: when the
// buffer is full it drops the event, counts it and returns false.
type ClickProducer interface {
	Offer(e click.Event) bool
	// Close flushes what is buffered and stops.
	Close(ctx context.Context) error
}

// ClickHandler stores a batch of click events. It returns only when the batch
// is stored (or failed); the bus redelivers a failed batch. The bus reuses the
// batch's memory once the handler returns: a handler keeps nothing of it (copy
// what it must remember, and clone strings of events decoded from a record,
// which share the record's memory).
type ClickHandler func(ctx context.Context, batch []click.Event) error

// LinkChange says a link's record changed (updated, archived, restored,
// deleted), or with Kind gallery a gallery's page: caches of domain+slug
// must forget it.
type LinkChange struct {
	// Kind is "" for a link, KindGallery for a gallery page (/bio/{slug})
	// and KindDomain for a custom domain.
	Kind   string `json:"kind,omitempty"`
	LinkID string `json:"linkId"`
	Domain string `json:"domain"`
	Slug   string `json:"slug"`
	// Nonce, when set, lets a publisher recognise its own change read back.
	Nonce string `json:"nonce,omitempty"`
}

// The kinds of change besides links.
const (
	// KindGallery marks the change of a gallery's page (Domain, Slug).
	KindGallery = "gallery"
	// KindDomain marks a custom domain verified or removed (Domain only):
	// edges forget which domain its Host serves.
	KindDomain = "domain"
	// KindReset is never published: a subscriber gets it from its own bus
	// when changes may have gone by unseen (its reader lost the topic for a
	// while), and forgets everything it cached.
	KindReset = "reset"
)

// LinkChanges publishes and delivers link changes.
type LinkChanges interface {
	// PublishLinkChange tells every subscriber, on every edge.
	PublishLinkChange(ctx context.Context, c LinkChange) error
	// SubscribeLinkChanges calls fn for every change published from now on.
	SubscribeLinkChanges(fn func(LinkChange))
}
