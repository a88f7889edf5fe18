package stats

import (
	"fmt"
	"testing"
	"time"

	"shortlink.dev/shared/fault"
)

func TestWsAnalyticsAggregate(t *testing.T) {
	d0 := time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC)
	d2 := d0.AddDate(0, 0, 2)
	days := []LinkDay{
		{Link: "a", Day: "2025-03-10", Clicks: 4, Visitors: 2},
		{Link: "a", Day: "2025-03-11", Clicks: 3, Visitors: 3},
		{Link: "b", Day: "2025-03-10", Clicks: 1, Visitors: 1},
	}
	keys := []LinkDayKey{
		{Link: "a", Day: "2025-03-10", Key: "US", Clicks: 3}, // 3/4 of 2 visitors: 1.5
		{Link: "a", Day: "2025-03-10", Key: "DE", Clicks: 1}, // 0.5
		{Link: "a", Day: "2025-03-11", Key: "DE", Clicks: 3}, // 3
		{Link: "b", Day: "2025-03-10", Key: "FR", Clicks: 1}, // 1
	}
	show := func(a *Analytics) string {
		return fmt.Sprintf("%d/%d %v", a.TotalClicks, a.UniqueClicks, a.Rows)
	}
	for _, c := range []struct {
		q    AnalyticsQuery
		want string
	}{
		{AnalyticsQuery{GroupBy: DimCountry}, "8/6 [{DE 4 4} {US 3 2} {FR 1 1}]"},
		{AnalyticsQuery{GroupBy: GroupLink}, "8/6 [{a 7 5} {b 1 1}]"},
		{AnalyticsQuery{GroupBy: GroupDay}, "8/6 [{2025-03-10 5 3} {2025-03-11 3 3} {2025-03-12 0 0}]"},
		{AnalyticsQuery{GroupBy: GroupLink, Filter: &KeyFilter{Dim: DimCountry, Key: "US"}}, "3/2 [{a 3 2}]"},
		{AnalyticsQuery{GroupBy: GroupDay, Filter: &KeyFilter{Dim: DimCountry, Key: "DE"}},
			"4/4 [{2025-03-10 1 1} {2025-03-11 3 3} {2025-03-12 0 0}]"},
		{AnalyticsQuery{GroupBy: DimCountry, Filter: &KeyFilter{Dim: DimCountry, Key: "JP"}}, "0/0 []"},
	} {
		k := keys
		if KeysDim(c.q) == "" {
			k = nil
		}
		if got := show(Aggregate(c.q, d0, d2, days, k)); got != c.want {
			t.Errorf("%+v:\n got %s\nwant %s", c.q, got, c.want)
		}
	}
	if got := show(Aggregate(AnalyticsQuery{GroupBy: DimCity}, d0, d2, nil, nil)); got != "0/0 []" {
		t.Errorf("nothing: %s", got)
	}
}

func TestWsAnalyticsCheckQuery(t *testing.T) {
	d0 := time.Date(2025, 3, 10, 15, 0, 0, 0, time.FixedZone("x", 3600))
	for _, q := range []AnalyticsQuery{
		{GroupBy: "tag", Range: Range{From: d0, To: d0}},
		{GroupBy: DimCountry, Range: Range{From: d0, To: d0.AddDate(0, 0, -1)}},
		{GroupBy: DimDevice, Range: Range{From: d0, To: d0}, Filter: &KeyFilter{Dim: DimCountry, Key: "US"}},
		{GroupBy: GroupDay, Range: Range{From: d0, To: d0}, Filter: &KeyFilter{Dim: "planet", Key: "x"}},
	} {
		if _, _, err := CheckAnalyticsQuery(q); fault.CodeOf(err) != fault.Validation {
			t.Errorf("%+v: %v, want a VALIDATION_ERROR", q, err)
		}
	}
	from, to, err := CheckAnalyticsQuery(AnalyticsQuery{GroupBy: GroupLink, Range: Range{From: d0, To: d0},
		Filter: &KeyFilter{Dim: DimOS, Key: "iOS"}})
	if err != nil || !from.Equal(time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC)) || !to.Equal(from) {
		t.Errorf("by link with an os filter: %s, %s, %v", from, to, err)
	}
}
