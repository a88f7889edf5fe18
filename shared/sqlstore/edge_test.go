package sqlstore

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"shortlink.dev/shared/id"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/workspace"
)

func TestChargeClickIsExactUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	st, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := &workspace.Workspace{ID: uuid.NewString(), Name: "w", Plan: workspace.Free, CreatedAt: time.Now()}
	if err := st.CreateWorkspace(ctx, w); err != nil {
		t.Fatal(err)
	}
	limit := int64(10)
	l := &link.Link{ID: id.New(id.Link), WorkspaceID: w.ID, Domain: "d", Slug: "s", DestinationURL: "https://x.example",
		ClickLimit: &limit, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := st.CreateLink(ctx, l, -1); err != nil {
		t.Fatal(err)
	}
	var ok atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			charged, err := st.ChargeClick(ctx, l.ID)
			if err != nil {
				t.Error(err)
			}
			if charged {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != limit {
		t.Fatalf("%d clicks charged, want exactly %d", ok.Load(), limit)
	}
	if reached, err := st.ClickLimitReached(ctx, l.ID); err != nil || !reached {
		t.Fatalf("ClickLimitReached = %v, %v", reached, err)
	}
	a, _ := st.Secret(ctx, "visitor")
	b, _ := st.Secret(ctx, "visitor")
	if len(a) != 32 || !bytes.Equal(a, b) {
		t.Fatalf("Secret not stable: %x %x", a, b)
	}
}
