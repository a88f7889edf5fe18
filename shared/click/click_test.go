package click

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

func TestEventIDsAreUniqueAcrossGoroutines(t *testing.T) {
	const n, workers = 10000, 8
	var mu sync.Mutex
	seen := make(map[EventID]bool, n*workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := make([]EventID, n)
			for i := range ids {
				ids[i] = NewEventID()
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				if seen[id] {
					t.Errorf("duplicate event id %s", id)
				}
				seen[id] = true
			}
		}()
	}
	wg.Wait()
}

func TestEventJSONRoundTrip(t *testing.T) {
	e := Event{V: Version, ID: NewEventID(), LinkID: "lnk_1", Trigger: TriggerQR, QRID: "qr_1", Bot: true, Visitor: Visitor{1, 2, 3}}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var got Event
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got != e {
		t.Fatalf("round trip changed the event:\n got %+v\nwant %+v", got, e)
	}
}

func TestUnmarshalTextLengths(t *testing.T) {
	for _, in := range []string{"", "00", strings.Repeat("0", 31), strings.Repeat("0", 33), strings.Repeat("0", 64), strings.Repeat("zz", 16)} {
		var id EventID
		var v Visitor
		if id.UnmarshalText([]byte(in)) == nil || v.UnmarshalText([]byte(in)) == nil {
			t.Errorf("%q: got no error", in)
		}
	}
	var id EventID
	if err := id.UnmarshalText([]byte(strings.Repeat("ab", 16))); err != nil || id[15] != 0xab {
		t.Errorf("32 hex digits: %v, %x", err, id)
	}
}
