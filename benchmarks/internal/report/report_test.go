package report

import (
	"strings"
	"testing"
	"time"
)

func TestTableMarkdown(t *testing.T) {
	tb := NewTable("server", "req/s")
	tb.Add("edge", 41234)
	tb.Add("bare302", "50 000")
	want := "| server  | req/s  |\n|---------|--------|\n| edge    | 41234  |\n| bare302 | 50 000 |\n"
	if got := tb.Markdown(); got != want {
		t.Errorf("Markdown:\n%s\nwant:\n%s", got, want)
	}
}

func TestInt(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1 000", 1234567: "1 234 567", -45000: "-45 000"} {
		if got := Int(n); got != want {
			t.Errorf("Int(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestDur(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0", 13300 * time.Nanosecond: "13.3 µs", 4580 * time.Microsecond: "4.58 ms", 1440 * time.Millisecond: "1.44 s", 90 * time.Second: "1.5 min",
	} {
		if got := Dur(d); got != want {
			t.Errorf("Dur(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 20; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	// Nearest rank: p50 of 20 is the 10th, p99 the 20th.
	if got := Percentile(ds, 0.5); got != 10*time.Millisecond {
		t.Errorf("p50 = %s", got)
	}
	if got := Percentile(ds, 0.99); got != 20*time.Millisecond {
		t.Errorf("p99 = %s", got)
	}
	if got := Percentile(nil, 0.5); got != 0 {
		t.Errorf("p50 of nothing = %s", got)
	}
}

func TestRatioAndVerdict(t *testing.T) {
	if got := Ratio(30, 40); got != 0.75 {
		t.Errorf("Ratio = %v", got)
	}
	if got := Ratio(1, 0); got != 0 {
		t.Errorf("Ratio over 0 = %v", got)
	}
	tests := []struct {
		got, target float64
		atLeast     bool
		want        string
	}{
		{0.75, 0.75, true, "meets"}, {0.749, 0.75, true, "MISSES"},
		{4.9, 5, false, "meets"}, {5.1, 5, false, "MISSES"},
	}
	for _, tt := range tests {
		if v := Verdict(tt.got, tt.target, tt.atLeast); v != tt.want {
			t.Errorf("Verdict(%v, %v, %v) = %s, want %s", tt.got, tt.target, tt.atLeast, v, tt.want)
		}
	}
}

func TestMachine(t *testing.T) {
	m := ReadMachine()
	if m.CPUs < 1 || m.Go == "" {
		t.Errorf("machine %+v", m)
	}
	if md := m.Markdown(); !strings.Contains(md, "| CPUs (nproc) |") || !strings.Contains(md, "| date (UTC) |") {
		t.Errorf("Markdown:\n%s", md)
	}
}
