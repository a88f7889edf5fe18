package sqlstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"testing"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/storetest"
)

func TestEdgeMissKeysSQLite(t *testing.T) {
	edgeMissKeys(t, mustOpenSQLite(t, filepath.Join(t.TempDir(), "shortlink.db")))
}

func TestEdgeMissKeysPostgres(t *testing.T) {
	edgeMissKeys(t, mustOpenPostgres(t, mustCreatePostgresDB(t)))
}

// edgeMissKeys: ScanLinkKeys lists every link's key (archived ones and
// those of unverified domains too), and ResolveLinks answers in one query
// what ResolveLink answers key by key.
func edgeMissKeys(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	ws := storetest.MustCreateWorkspace(t, s)
	def := storetest.UniqueDomain()
	custom := storetest.UniqueDomain()
	storetest.MustCreateDomain(t, s, ws.ID, custom) // not verified: its links do not resolve
	var want []string
	for i := range 5 {
		l := storetest.NewLink(ws.ID, def, fmt.Sprintf("s%d", i))
		l.IsArchived = i == 4
		storetest.MustCreateLink(t, s, l, -1)
		want = append(want, def+"/"+l.Slug)
	}
	storetest.MustCreateLink(t, s, storetest.NewLink(ws.ID, custom, "c"), -1)
	want = append(want, custom+"/c")

	n, err := s.CountLinkKeys(ctx)
	if err != nil || n != len(want) {
		t.Fatalf("CountLinkKeys = %d, %v; want %d", n, err, len(want))
	}
	var got []string
	if err := s.ScanLinkKeys(ctx, func(d, sl []byte) { got = append(got, string(d)+"/"+string(sl)) }); err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ScanLinkKeys listed %v, want %v", got, want)
	}

	keys := [][2]string{{def, "s0"}, {def, "s3"}, {def, "s4"}, {def, "nope"}, {custom, "c"}, {def, "S0"}}
	ls, err := s.ResolveLinks(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[[2]string]bool{}
	for _, l := range ls {
		byKey[[2]string{l.Domain, l.Slug}] = true
	}
	if len(ls) != len(byKey) {
		t.Fatalf("ResolveLinks returned a key twice: %d links, %d keys", len(ls), len(byKey))
	}
	for _, k := range keys {
		one, err := s.ResolveLink(ctx, k[0], k[1])
		if err != nil && !fault.Is(err, fault.NotFound) {
			t.Fatal(err)
		}
		if (one != nil) != byKey[k] {
			t.Errorf("%v: ResolveLink found %v, ResolveLinks %v", k, one != nil, byKey[k])
		}
	}
	for _, l := range ls {
		one, _ := s.ResolveLink(ctx, l.Domain, l.Slug)
		if one.ID != l.ID || one.DestinationURL != l.DestinationURL || one.IsArchived != l.IsArchived {
			t.Errorf("%s/%s: ResolveLinks read %+v, ResolveLink %+v", l.Domain, l.Slug, l, one)
		}
	}
	if _, err := s.ResolveLinks(ctx, make([][2]string, sqlstore.MaxResolveLinks+1)); err == nil {
		t.Fatal("ResolveLinks read more than MaxResolveLinks keys")
	}
}
