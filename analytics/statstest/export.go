package statstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/stats"
)

// testExportClicks is the contract of Reader.ExportClicks: the link's human
// clicks of the range, each once, oldest first, with what the edge recorded.
func testExportClicks(t *testing.T, b Backend) {
	t.Run("OK", func(t *testing.T) {
		l := newLink(t, b)
		other := link{l.workspaceID, b.NewLink(t, l.workspaceID)}
		qr := b.NewQRCode(t, l.workspaceID, l.id)
		at := func(d int, min int) time.Time { return noon(d).Add(time.Duration(min) * time.Minute) }

		// Two batches whose clicks interleave in time: chunks that overlap.
		a0, a2, a4 := l.click(at(0, 0)), l.click(at(0, 2)), l.click(at(0, 4))
		a2.Country, a2.City, a2.Device, a2.Browser, a2.OS = "DE", "Berlin", click.DeviceMobile, "Safari", "iOS"
		a2.Referrer, a2.Target = "news.ycombinator.com", "https://example.com/?utm_source=hn&x=1"
		a4.City = "" // unknown
		b1, b3 := l.scan(qr, at(0, 1)), l.click(at(0, 3))
		bot := l.click(at(0, 5))
		bot.Bot = true
		day2 := l.click(at(2, 0))
		before, after := l.click(at(-1, 0)), l.click(at(3, 0)) // outside the range
		mustWrite(t, b, a4, a0, a2, other.click(at(0, 0)), before)
		mustWrite(t, b, b3, b1, bot, day2, after, a2) // a2 again: redelivered
		mustWrite(t, b, a0, b1)                       // and these once more, alone

		got := mustExport(t, b, l.id, rangeOf(0, 2))
		wantEvents(t, got, a0, b1, a2, b3, a4, day2)

		// One day; the days around the range; a range without clicks.
		wantEvents(t, mustExport(t, b, l.id, rangeOf(2, 2)), day2)
		wantEvents(t, mustExport(t, b, l.id, rangeOf(-1, 3)), before, a0, b1, a2, b3, a4, day2, after)
		wantEvents(t, mustExport(t, b, l.id, rangeOf(1, 1)))
		// The range's ends count as whole UTC days, whatever the time in them.
		wantEvents(t, mustExport(t, b, l.id, stats.Range{From: noon(2), To: noon(2).Add(-time.Hour)}), day2)
	})

	t.Run("OKNoClicks", func(t *testing.T) {
		l := newLink(t, b)
		wantEvents(t, mustExport(t, b, l.id, rangeOf(0, 365)))
		wantEvents(t, mustExport(t, b, "lnk_never_made", rangeOf(0, 0)))
	})

	// A year of clicks, many per day, in two batches that interleave: more
	// chunks than one read holds.
	t.Run("OKLongRange", func(t *testing.T) {
		l := newLink(t, b)
		var first, second, all []click.Event
		for d := 0; d < stats.MaxExportDays; d++ {
			for i := 0; i < 4; i++ {
				e := l.click(day(d).Add(time.Duration(i)*time.Hour + time.Duration(d)*time.Millisecond))
				all = append(all, e)
				if i%2 == 0 {
					first = append(first, e)
				} else {
					second = append(second, e)
				}
			}
		}
		mustWrite(t, b, first...)
		mustWrite(t, b, second...)
		got := mustExport(t, b, l.id, rangeOf(0, stats.MaxExportDays-1))
		wantEvents(t, got, all...)
	})

	t.Run("ErrRange", func(t *testing.T) {
		l := newLink(t, b)
		for _, r := range []stats.Range{rangeOf(2, 1), rangeOf(0, stats.MaxExportDays)} {
			err := b.ExportClicks(context.Background(), l.id, r, func(*click.Event) error { return nil })
			if !fault.Is(err, fault.Validation) {
				t.Errorf("export %s to %s: got %v, want VALIDATION_ERROR", r.From.Format(time.DateOnly), r.To.Format(time.DateOnly), err)
			}
		}
	})

	t.Run("ErrStoppedByCallback", func(t *testing.T) {
		l := newLink(t, b)
		mustWrite(t, b, l.clicks(5, noon(0))...)
		stop := errors.New("client went away")
		calls := 0
		err := b.ExportClicks(context.Background(), l.id, rangeOf(0, 0), func(*click.Event) error {
			calls++
			if calls == 2 {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) || calls != 2 {
			t.Fatalf("export stopped by its callback: %v after %d calls; want the callback's error after 2", err, calls)
		}
	})
}

func mustExport(t testing.TB, b Backend, linkID string, r stats.Range) []click.Event {
	t.Helper()
	var got []click.Event
	err := b.ExportClicks(context.Background(), linkID, r, func(e *click.Event) error {
		got = append(got, *e)
		return nil
	})
	if err != nil {
		t.Fatalf("export clicks of %s: %v", linkID, err)
	}
	return got
}

// wantEvents compares an export with the events expected, in time order
// (ties by id), field by field as the edge recorded them.
func wantEvents(t testing.TB, got []click.Event, want ...click.Event) {
	t.Helper()
	want = slices.Clone(want)
	slices.SortStableFunc(want, func(a, b click.Event) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		return bytes.Compare(a.ID[:], b.ID[:])
	})
	if len(got) != len(want) {
		t.Fatalf("exported %d clicks, want %d:\n got %s\nwant %s", len(got), len(want), showEvents(got), showEvents(want))
	}
	for i := range want {
		w := want[i]
		w.Time = stored(w.Time)
		if g, w := showEvent(got[i]), showEvent(w); g != w {
			t.Fatalf("click %d of %d:\n got %s\nwant %s", i, len(want), g, w)
		}
	}
}

func showEvent(e click.Event) string {
	return fmt.Sprintf("%s %s link=%s ws=%s %s/%s -> %s country=%q city=%q %s/%s/%s ref=%q %s qr=%q bot=%v visitor=%s",
		e.Time.Format(time.RFC3339Nano), e.ID, e.LinkID, e.WorkspaceID, e.Domain, e.Slug, e.Target,
		e.Country, e.City, e.Device, e.Browser, e.OS, e.Referrer, e.Trigger, e.QRID, e.Bot, e.Visitor)
}

func showEvents(list []click.Event) string {
	if len(list) > 20 {
		return fmt.Sprintf("[%d clicks]", len(list))
	}
	parts := make([]string, len(list))
	for i, e := range list {
		parts[i] = e.Time.UTC().Format(time.RFC3339Nano) + " " + e.ID.String()[:8]
	}
	return "[" + strings.Join(parts, " ") + "]"
}
