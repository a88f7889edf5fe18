package dashboard

import (
	"testing"

	"shortlink.dev/controlplane/internal/imports/sources"
)

// The column mapper offers every field a mapping may name, once.
func TestImportMapperLabelsEveryField(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range mapperLabels {
		if seen[f.Name] || f.Label == "" {
			t.Errorf("mapper field %q twice or without a label", f.Name)
		}
		seen[f.Name] = true
	}
	for _, f := range sources.MappingFields {
		if !seen[f] {
			t.Errorf("the mapper has no row for %q", f)
		}
	}
	if len(seen) != len(sources.MappingFields) {
		t.Errorf("the mapper has %d fields, the mapping %d", len(seen), len(sources.MappingFields))
	}
}
