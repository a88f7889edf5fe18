package statstest

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"shortlink.dev/shared/click"
)

// BenchBatchSize is the size of the batches Bench writes, as the bus hands them over.
const BenchBatchSize = 1000

// BenchBatch returns a batch of BenchBatchSize clicks on 10 new links of a new
// workspace; one in 20 is a bot.
func BenchBatch(b *testing.B, s Backend) []click.Event {
	b.Helper()
	ws := s.NewWorkspace(b)
	links := make([]string, 10)
	for i := range links {
		links[i] = s.NewLink(b, ws)
	}
	batch := make([]click.Event, BenchBatchSize)
	for i := range batch {
		batch[i] = click.Event{
			V: click.Version, ID: click.NewEventID(), Time: time.Now(), LinkID: links[i%len(links)], WorkspaceID: ws,
			Domain: "sho.rt", Slug: "s", Target: "https://example.com/landing?utm_source=x",
			Country: "US", City: "Boston", Device: click.DeviceMobile, Browser: "Safari", OS: "iOS",
			Referrer: "t.co", Trigger: click.TriggerLink, Bot: i%20 == 0,
			Visitor: click.Visitor(click.NewEventID()),
		}
	}
	return batch
}

// Bench measures a backend's WriteClicks: "New" stores batches of new clicks,
// "Redelivered" hands the same batch over again, as the bus does after a
// failure (nothing new is stored, the counters are counted again). It returns
// the batch it wrote, stored.
func Bench(b *testing.B, s Backend) []click.Event {
	batch := BenchBatch(b, s)
	ctx := context.Background()
	var seq uint64
	b.Run("New", func(b *testing.B) {
		for b.Loop() {
			for i := range batch {
				seq++
				binary.BigEndian.PutUint64(batch[i].ID[8:], seq)
			}
			if err := s.WriteClicks(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "clicks/s")
	})
	if err := s.WriteClicks(ctx, batch); err != nil {
		b.Fatal(err)
	}
	b.Run("Redelivered", func(b *testing.B) {
		for b.Loop() {
			if err := s.WriteClicks(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "clicks/s")
	})
	return batch
}
