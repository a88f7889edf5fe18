package sqlite_test

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/stats"
)

// TestStatsAtScale loads SHORTLINK_LOAD_CLICKS clicks of one link over 30
// days through WriteClicks and times LinkStats: an opt-in check of the
// rollups (make bench measures the same through the binaries).
func TestStatsAtScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SHORTLINK_LOAD_CLICKS"))
	if n == 0 {
		t.Skip("set SHORTLINK_LOAD_CLICKS to run")
	}
	b := mustOpen(t, filepath.Join(t.TempDir(), "shortlink.db"))
	ws := b.NewWorkspace(t)
	id := b.NewLink(t, ws)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	countries := []string{"US", "DE", "FR", "GB", "IN", "BR", "JP", "CA", "ES", "IT", ""}
	browsers := []string{"Chrome", "Safari", "Firefox", "Edge", "Samsung Internet", "Opera"}
	devices := []string{click.DeviceDesktop, click.DeviceMobile, click.DeviceTablet}
	start := time.Date(2025, time.March, 1, 0, 0, 0, 0, time.UTC)
	batch := make([]click.Event, 1000)
	began := time.Now()
	for written := 0; written < n; written += len(batch) {
		at := start.Add(time.Duration(written) * (30 * 24 * time.Hour / time.Duration(n)))
		for i := range batch {
			batch[i] = click.Event{ID: click.NewEventID(), Time: at.Add(time.Duration(i) * time.Millisecond),
				LinkID: id, WorkspaceID: ws, Domain: "sho.rt", Slug: "s", Target: "https://example.com/",
				Country: countries[rng.IntN(len(countries))], Device: devices[rng.IntN(len(devices))],
				Browser: browsers[rng.IntN(len(browsers))], Referrer: "ref" + strconv.Itoa(rng.IntN(200)) + ".example",
				Trigger: click.TriggerLink, Bot: rng.IntN(50) == 0}
			binary.LittleEndian.PutUint64(batch[i].Visitor[:], rng.Uint64())
			binary.LittleEndian.PutUint64(batch[i].Visitor[8:], rng.Uint64())
		}
		if err := b.WriteClicks(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("loaded %d clicks in %v", n, time.Since(began))
	r := stats.Range{From: start, To: start.AddDate(0, 0, 29)}
	for range 5 {
		began := time.Now()
		st, err := b.LinkStats(ctx, id, r)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("LinkStats: %v (total %d, unique %d, %d referrers)", time.Since(began), st.TotalClicks,
			st.UniqueClicks, len(st.ByReferrer))
	}
}
