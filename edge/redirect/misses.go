package redirect

// initMisses sets up what answers the cache's misses: the filter of the
// slugs that exist, when the source lists its keys and changes arrive, and
// the batching of the misses of different links (filter.go, batch.go).
func (c *cache) initMisses(o Options) {
	if !o.NoAbsentFilter {
		c.exist = newExistence(o.Source, o.Changes, o.Registry, o.Logger)
	}
	c.reads = newBatcher(o.Source, o.Registry)
}
