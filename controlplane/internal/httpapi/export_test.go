package httpapi

import (
	"context"
	"encoding/csv"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/stats"
	"shortlink.dev/shared/workspace"
)

// exportReader is a stats.Reader whose ExportClicks hands out its events
// and records the range it was asked for.
type exportReader struct {
	events []click.Event
	got    stats.Range
	linkID string
	// during, when set, runs before the event of that index is handed out.
	during map[int]func()
	// failAt, when >= 0, fails the export before that event.
	failAt int
}

func (e *exportReader) LinkStats(context.Context, string, stats.Range) (*stats.LinkStats, error) {
	return &stats.LinkStats{}, nil
}

func (e *exportReader) ClicksSince(context.Context, string, time.Time) (int64, error) { return 0, nil }

func (e *exportReader) ExportClicks(_ context.Context, linkID string, r stats.Range, fn func(*click.Event) error) error {
	e.got, e.linkID = r, linkID
	for i := range e.events {
		if f := e.during[i]; f != nil {
			f()
		}
		if i == e.failAt {
			return errors.New("analytics store went away")
		}
		if err := fn(&e.events[i]); err != nil {
			return err
		}
	}
	return nil
}

// mustExportAPI is a postAPI whose stats come from r, with one link.
func mustExportAPI(t *testing.T, r *exportReader) (*postAPI, string) {
	t.Helper()
	a := mustPostAPI(t, postOptions{stats: r})
	return a, createdID(t, a.send(t, a.key, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/"}`))
}

func readCSV(t *testing.T, rec *httptest.ResponseRecorder) [][]string {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", rec.Code, rec.Body)
	}
	rows, err := csv.NewReader(strings.NewReader(rec.Body.String())).ReadAll()
	if err != nil {
		t.Fatalf("not CSV: %v\n%s", err, rec.Body)
	}
	return rows
}

func TestExportClicksCSV(t *testing.T) {
	at := time.Date(2025, time.March, 10, 12, 34, 56, 789123000, time.UTC)
	ev := func(i int) click.Event {
		return click.Event{ID: click.NewEventID(), Time: at.Add(time.Duration(i) * time.Minute), Domain: "localhost:8081", Slug: "abc",
			Target: "https://example.com/", Country: "US", City: "Boston", Device: "desktop", Browser: "Chrome", OS: "Windows",
			Trigger: click.TriggerLink, Visitor: click.Visitor(click.NewEventID())}
	}
	first, second, third := ev(0), ev(1), ev(2)
	second.Target = "https://example.com/p?utm_source=news&utm_medium=email&utm_campaign=spring+sale&utm_term=t&utm_content=c&x=1"
	second.Referrer, second.Country, second.City = "news.ycombinator.com", "", ""
	second.Trigger, second.QRID = click.TriggerQR, "qr_123"
	// What a visitor can put in a URL must not become a spreadsheet formula.
	third.Target = "https://example.com/?utm_source==HYPERLINK(\"http://evil\")&utm_medium=-2+3&utm_campaign=@x"
	r := &exportReader{events: []click.Event{first, second, third}, failAt: -1}
	a, id := mustExportAPI(t, r)
	for i := range r.events {
		r.events[i].LinkID, r.events[i].WorkspaceID = id, a.ws.ID
	}

	rec := a.send(t, a.key, "GET", "/api/v1/links/"+id+"/clicks.csv?from=2025-03-01&to=2025-03-31T23:00:00Z", "")
	rows := readCSV(t, rec)
	if ct := rec.Header().Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if cd := rec.Header().Get("Content-Disposition"); cd != `attachment; filename="clicks-`+id+`-2025-03-01-to-2025-03-31.csv"` {
		t.Errorf("Content-Disposition %q", cd)
	}
	if rec.Header().Get("X-RateLimit-Limit") == "" {
		t.Errorf("no rate-limit headers")
	}
	if r.linkID != id || !r.got.From.Equal(time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)) || !r.got.To.Equal(time.Date(2025, 3, 31, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("asked the store for %s %+v", r.linkID, r.got)
	}
	want := [][]string{
		exportColumns,
		{"2025-03-10T12:34:56.789123Z", first.ID.String(), id, "localhost:8081", "abc", "http://localhost:8081/abc", "https://example.com/",
			"US", "Boston", "desktop", "Chrome", "Windows", "direct", "link", "", "", "", "", "", ""},
		{"2025-03-10T12:35:56.789123Z", second.ID.String(), id, "localhost:8081", "abc", "http://localhost:8081/abc", second.Target,
			"", "", "desktop", "Chrome", "Windows", "news.ycombinator.com", "qr", "qr_123", "news", "email", "spring sale", "t", "c"},
		{"2025-03-10T12:36:56.789123Z", third.ID.String(), id, "localhost:8081", "abc", "http://localhost:8081/abc", third.Target,
			"US", "Boston", "desktop", "Chrome", "Windows", "direct", "link", "", `'=HYPERLINK("http://evil")`, "'-2 3", "'@x", "", ""},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(want), rec.Body)
	}
	for i := range want {
		if strings.Join(rows[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("row %d:\n got %q\nwant %q", i, rows[i], want[i])
		}
	}
	// Never an IP address (none is stored; none may appear).
	for _, col := range rows[0] {
		if col == "ip" || strings.HasPrefix(col, "ip_") || strings.HasSuffix(col, "_ip") {
			t.Errorf("column %q", col)
		}
	}
}

func TestExportClicksRange(t *testing.T) {
	r := &exportReader{failAt: -1}
	a, id := mustExportAPI(t, r)
	today := time.Now().UTC().Truncate(24 * time.Hour)

	// Default: the last 30 days up to today, as the stats. No clicks: the header row alone.
	rows := readCSV(t, a.send(t, a.key, "GET", "/api/v1/links/"+id+"/clicks.csv", ""))
	if len(rows) != 1 || !r.got.To.Equal(today) || !r.got.From.Equal(today.AddDate(0, 0, -29)) {
		t.Fatalf("default export: %d rows, range %+v", len(rows), r.got)
	}
	// A year (366 days) is the most.
	from := today.AddDate(0, 0, -365).Format(time.DateOnly)
	readCSV(t, a.send(t, a.key, "GET", "/api/v1/links/"+id+"/clicks.csv?from="+from, ""))
	for _, q := range []string{
		"from=" + today.AddDate(0, 0, -366).Format(time.DateOnly),
		"from=2024-01-01&to=2025-12-31",
		"from=yesterday", "to=2025-02-30", "from=2025-03-02&to=2025-03-01", "from=03/01/2025",
	} {
		t.Run(q, func(t *testing.T) {
			rec := a.send(t, a.key, "GET", "/api/v1/links/"+id+"/clicks.csv?"+q, "")
			wantEnvelopeError(t, rec, http.StatusBadRequest, "VALIDATION_ERROR", "")
			if rec.Header().Get("Content-Disposition") != "" {
				t.Fatalf("an error answered as an attachment")
			}
		})
	}
}

func TestExportClicksAccess(t *testing.T) {
	r := &exportReader{failAt: -1}
	a, id := mustExportAPI(t, r)
	noAnalytics := a.newKey(t, a.ws.ID, workspace.LinksRead)
	wantEnvelopeError(t, a.send(t, noAnalytics, "GET", "/api/v1/links/"+id+"/clicks.csv", ""), http.StatusForbidden, "FORBIDDEN", "")
	analyticsOnly := a.newKey(t, a.ws.ID, workspace.AnalyticsRead)
	readCSV(t, a.send(t, analyticsOnly, "GET", "/api/v1/links/"+id+"/clicks.csv", ""))
	_, otherKey := a.newWorkspace(t, workspace.Free, workspace.AllPermissions...)
	wantEnvelopeError(t, a.send(t, otherKey, "GET", "/api/v1/links/"+id+"/clicks.csv", ""), http.StatusNotFound, "NOT_FOUND", "")
	wantEnvelopeError(t, a.send(t, a.key, "GET", "/api/v1/links/lnk_nothere/clicks.csv", ""), http.StatusNotFound, "NOT_FOUND", "")
	wantEnvelopeError(t, a.send(t, "", "GET", "/api/v1/links/"+id+"/clicks.csv", ""), http.StatusUnauthorized, "UNAUTHORIZED", "")
}

// TestExportClicksStreams: rows reach the client while the store is still
// reading, not all at the end.
func TestExportClicksStreams(t *testing.T) {
	const n = 5000
	r := &exportReader{failAt: -1}
	for i := range n {
		r.events = append(r.events, click.Event{ID: click.NewEventID(), Time: time.Now().Add(time.Duration(i) * time.Millisecond), Trigger: click.TriggerLink})
	}
	a, id := mustExportAPI(t, r)
	rec := httptest.NewRecorder()
	var sentMidway int
	var flushedMidway bool
	r.during = map[int]func(){n / 2: func() { sentMidway, flushedMidway = rec.Body.Len(), rec.Flushed }}
	req := httptest.NewRequest("GET", "/api/v1/links/"+id+"/clicks.csv", nil)
	req.Header.Set("Authorization", "Bearer "+a.key)
	a.ServeHTTP(rec, req)
	rows := readCSV(t, rec)
	if len(rows) != n+1 {
		t.Fatalf("%d rows, want %d", len(rows), n+1)
	}
	if !flushedMidway || sentMidway < rec.Body.Len()/4 {
		t.Fatalf("half-way through the export the client had %d of %d bytes (flushed %v)", sentMidway, rec.Body.Len(), flushedMidway)
	}
}

func TestExportClicksStoreFails(t *testing.T) {
	t.Run("BeforeFirstByte", func(t *testing.T) {
		r := &exportReader{failAt: 0, events: make([]click.Event, 3)}
		a, id := mustExportAPI(t, r)
		rec := a.send(t, a.key, "GET", "/api/v1/links/"+id+"/clicks.csv", "")
		wantEnvelopeError(t, rec, http.StatusInternalServerError, "INTERNAL_ERROR", "")
		if rec.Header().Get("Content-Disposition") != "" || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			t.Fatalf("error headers %v", rec.Header())
		}
	})
	t.Run("MidStream", func(t *testing.T) {
		r := &exportReader{failAt: 3000}
		for range 5000 {
			r.events = append(r.events, click.Event{ID: click.NewEventID(), Trigger: click.TriggerLink})
		}
		a, id := mustExportAPI(t, r)
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Fatalf("a failure after the first byte: recovered %v, want the connection aborted (http.ErrAbortHandler)", v)
			}
		}()
		a.send(t, a.key, "GET", "/api/v1/links/"+id+"/clicks.csv", "")
		t.Fatal("the export ended normally")
	})
}

func TestCSVCell(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "abc": "abc", "=1+1": "'=1+1", "+1": "'+1", "-1": "'-1", "@SUM(A1)": "'@SUM(A1)",
		"\tx": "'\tx", "\rx": "'\rx", "a=b": "a=b", strconv.Quote("=x"): strconv.Quote("=x"),
	} {
		if got := cell(in); got != want {
			t.Errorf("cell(%q) = %q, want %q", in, got, want)
		}
	}
}
