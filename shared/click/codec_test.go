package click

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// sampleEvents returns n clicks the way an edge sends them: grouped by link,
// with the fields of real visits.
func sampleEvents(n int) []Event {
	countries := []string{"US", "DE", "FR", "", "JP"}
	browsers := []string{"Chrome", "Safari", "Firefox"}
	base := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	out := make([]Event, n)
	for i := range out {
		link := i / 50
		out[i] = Event{
			V:           Version,
			ID:          NewEventID(),
			Time:        base.Add(time.Duration(i*137) * time.Microsecond),
			LinkID:      fmt.Sprintf("lnk_%012d", link),
			WorkspaceID: fmt.Sprintf("ws_%010d", link%7),
			Domain:      "sho.rt",
			Slug:        fmt.Sprintf("s%d", link),
			Target:      fmt.Sprintf("https://www.example.com/products/item-%d?utm_source=newsletter", link),
			Country:     countries[i%len(countries)],
			City:        "",
			Device:      DeviceMobile,
			Browser:     browsers[i%len(browsers)],
			OS:          "iOS",
			Referrer:    "t.co",
			Trigger:     TriggerLink,
			Bot:         i%17 == 0,
			Visitor:     Visitor{byte(i), byte(i >> 8), 3},
		}
	}
	return out
}

func TestRecordRoundTrip(t *testing.T) {
	local := time.FixedZone("UTC+2", 2*3600)
	all := Event{
		V: Version, ID: NewEventID(), Time: time.Date(2026, 11, 23, 14, 5, 6, 789123456, local),
		LinkID: "lnk_1", WorkspaceID: "ws_1", Domain: "sho.rt", Slug: "abc",
		Target: "https://example.com/ü?x=1", Country: "DE", City: "Berlin", Device: DeviceTablet,
		Browser: "Firefox", OS: "Linux", Referrer: "news.ycombinator.com", Trigger: TriggerQR,
		QRID: "qr_1", Bot: true, Visitor: Visitor{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
	}
	second := all // every field the same as the previous event's
	second.ID = NewEventID()
	emptied := Event{V: Version, ID: NewEventID(), Time: all.Time.Add(-time.Hour)} // every field back to ""
	tests := []struct {
		name   string
		events []Event
	}{
		{"Empty", nil},
		{"EveryField", []Event{all}},
		{"SameAsPrevious", []Event{all, second}},
		{"BackToEmpty", []Event{all, emptied, all}},
		{"ZeroTime", []Event{{V: Version}}},
		{"FarTimes", []Event{
			{V: Version, Time: time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC)},
			{V: Version, Time: time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)},
		}},
		{"LongString", []Event{{V: Version, Target: strings.Repeat("x", 100000)}}},
		{"Many", sampleEvents(2000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := AppendRecord([]byte("prefix"), tt.events)
			if !bytes.HasPrefix(b, []byte("prefix")) {
				t.Fatal("AppendRecord overwrote dst")
			}
			prior := Event{LinkID: "already there"}
			got, err := DecodeRecord([]Event{prior}, b[len("prefix"):])
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.events)+1 || got[0] != prior {
				t.Fatalf("decoded %d events after the one in dst, want %d", len(got)-1, len(tt.events))
			}
			for i, want := range tt.events {
				// Times keep microseconds and come back in UTC.
				want.Time = want.Time.Truncate(time.Microsecond).UTC()
				if got[i+1] != want {
					t.Fatalf("event %d changed:\n got %+v\nwant %+v", i, got[i+1], want)
				}
			}
		})
	}
}

// TestRecordIsCompact: the edge sends many clicks of a link together; a
// record of them must be much smaller than their JSON.
func TestRecordIsCompact(t *testing.T) {
	events := sampleEvents(1000)
	b := AppendRecord(nil, events)
	j, err := json.Marshal(events)
	if err != nil {
		t.Fatal(err)
	}
	if perEvent := len(b) / len(events); perEvent > 60 {
		t.Errorf("%d bytes per event (JSON: %d)", perEvent, len(j)/len(events))
	}
}

func TestDecodeRecordReadsLegacyJSON(t *testing.T) {
	want := Event{
		V: Version, ID: NewEventID(), Time: time.Date(2026, 11, 23, 12, 0, 0, 123456789, time.UTC),
		LinkID: "lnk_1", Domain: "sho.rt", Slug: "abc", Country: "FR", Trigger: TriggerQR, QRID: "qr_9",
		Bot: true, Visitor: Visitor{9, 9},
	}
	j, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRecord(nil, append([]byte(" \n\t"), j...))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("got %+v, want [%+v]", got, want)
	}
}

func TestDecodeRecordRejectsMalformed(t *testing.T) {
	valid := AppendRecord(nil, sampleEvents(3))
	tests := []struct {
		name string
		b    []byte
	}{
		{"Nothing", nil},
		{"Spaces", []byte("  ")},
		{"Text", []byte("hello")},
		{"JSONArray", []byte(`[{"id":"00"}]`)},
		{"BrokenJSON", []byte(`{"linkId":`)},
		{"TwoJSONEvents", []byte(`{"linkId":"a"}{"linkId":"b"}`)},
		{"JSONIDTooLong", []byte(`{"id":"0000000000000000000000000000000000"}`)},
		{"JSONVisitorNotHex", []byte(`{"visitor":"zz"}`)},
		{"MagicOnly", []byte{recordMagic}},
		{"UnknownVersion", append([]byte{recordMagic, 99}, valid[2:]...)},
		{"NoCount", []byte{recordMagic, 1}},
		{"CountBeyondTheBytes", []byte{recordMagic, 1, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"CountBeyondTheCap", append([]byte{recordMagic, 1, 0x81, 0x80, 0x80, 0x01}, make([]byte, 1<<20)...)},
		{"Truncated", valid[:len(valid)-1]},
		{"TrailingBytes", append(append([]byte(nil), valid...), 0)},
		{"StringBeyondTheBytes", func() []byte {
			b := AppendRecord(nil, []Event{{}})
			b[3+16+1] = 0x7f // LinkID's length
			return b
		}()},
		{"UnknownFlags", func() []byte {
			b := AppendRecord(nil, []Event{{}})
			b[len(b)-17] = 0x80
			return b
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []Event{{LinkID: "kept"}}
			got, err := DecodeRecord(dst, tt.b)
			if err == nil {
				t.Fatalf("decoded %d events from malformed input", len(got)-1)
			}
			if len(got) != 1 || got[0].LinkID != "kept" {
				t.Fatalf("dst changed on error: %+v", got)
			}
		})
	}
}

func TestDecodeRecordSharesStrings(t *testing.T) {
	b := AppendRecord(nil, sampleEvents(1000))
	var dst []Event
	dst, _ = DecodeRecord(dst, b) // grows dst
	allocs := testing.AllocsPerRun(20, func() {
		var err error
		if dst, err = DecodeRecord(dst[:0], b); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("%v allocations to decode a record of 1000 events into a slice with room", allocs)
	}
}

// normalized is e as a record keeps it.
func normalized(e Event) Event {
	e.V = Version
	e.Time = time.UnixMicro(e.Time.UnixMicro()).UTC()
	return e
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(AppendRecord(nil, sampleEvents(5)))
	f.Add(AppendRecord(nil, []Event{{}}))
	f.Add(AppendRecord(nil, nil))
	j, _ := json.Marshal(sampleEvents(1)[0])
	f.Add(j)
	f.Add([]byte(`{"time":"2026-01-02T03:04:05.123456789+02:00","bot":true}`))
	f.Add([]byte{recordMagic, 1, 1})
	f.Add([]byte(`{"id":"0000000000000000000000000000000000"}`)) // an id too long
	f.Fuzz(func(t *testing.T, b []byte) {
		events, err := DecodeRecord(nil, b)
		if err != nil {
			return
		}
		again, err := DecodeRecord(nil, AppendRecord(nil, events))
		if err != nil {
			t.Fatalf("the re-encoding of decoded events does not decode: %v", err)
		}
		if len(again) != len(events) {
			t.Fatalf("%d events came back as %d", len(events), len(again))
		}
		for i := range events {
			if want := normalized(events[i]); !reflect.DeepEqual(again[i], want) {
				t.Fatalf("event %d changed:\n got %+v\nwant %+v", i, again[i], want)
			}
		}
	})
}

func BenchmarkAppendRecord(b *testing.B) {
	events := sampleEvents(1000)
	buf := AppendRecord(nil, events)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf = AppendRecord(buf[:0], events)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/click")
	b.ReportMetric(float64(len(buf))/float64(len(events)), "bytes/click")
}

func BenchmarkDecodeRecord(b *testing.B) {
	events := sampleEvents(1000)
	buf := AppendRecord(nil, events)
	dst := make([]Event, 0, len(events))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var err error
		if dst, err = DecodeRecord(dst[:0], buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/click")
}

// TestAppendRecordOfMatchesAppendRecord: the record of events held by pointer
// is the record of the same events held by value.
func TestAppendRecordOfMatchesAppendRecord(t *testing.T) {
	events := sampleEvents(50)
	ptrs := make([]*Event, len(events))
	for i := range events {
		ptrs[i] = &events[i]
	}
	if a, b := AppendRecord(nil, events), AppendRecordOf(nil, ptrs); !bytes.Equal(a, b) {
		t.Fatalf("AppendRecordOf differs from AppendRecord:\n%x\n%x", b, a)
	}
}
