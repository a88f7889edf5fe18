package wrk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		file          string
		requests      int64
		elapsed       time.Duration
		p50, p90, p99 time.Duration
		socket, non23 int64
	}{
		// Stopped with SIGINT after 2.13 s of a 10 s run: the report is of the time it ran.
		{"interrupted.txt", 1437, 2127254 * time.Microsecond, 4580 * time.Microsecond, 17160 * time.Microsecond, 40570 * time.Microsecond, 0, 0},
		{"errors.txt", 11420, 3016999 * time.Microsecond, 13930 * time.Microsecond, 43260 * time.Microsecond, 110050 * time.Microsecond, 6, 11420},
		{"slow.txt", 4800000, 120 * time.Second, 812 * time.Microsecond, time.Second, 90 * time.Second, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			out, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			r, err := Parse(out)
			if err != nil {
				t.Fatal(err)
			}
			if r.Requests != tt.requests || r.P50 != tt.p50 || r.P90 != tt.p90 || r.P99 != tt.p99 {
				t.Errorf("got requests %d p50 %s p90 %s p99 %s, want %d %s %s %s", r.Requests, r.P50, r.P90, r.P99, tt.requests, tt.p50, tt.p90, tt.p99)
			}
			// Elapsed comes from Requests/sec, exact to a millisecond.
			if d := r.Elapsed - tt.elapsed; d < -time.Millisecond || d > time.Millisecond {
				t.Errorf("elapsed %s, want %s", r.Elapsed, tt.elapsed)
			}
			if r.SocketErrors != tt.socket || r.Non2xx3xx != tt.non23 {
				t.Errorf("errors: socket %d non-2xx/3xx %d, want %d %d", r.SocketErrors, r.Non2xx3xx, tt.socket, tt.non23)
			}
		})
	}
}

func TestParseRejectsOtherOutput(t *testing.T) {
	for _, out := range []string{"", "unable to connect to 127.0.0.1:1 Connection refused\n", "  10 requests in 1.00s, 1KB read\n"} {
		if _, err := Parse([]byte(out)); err == nil {
			t.Errorf("Parse(%q) succeeded", out)
		}
	}
}

func TestRPS(t *testing.T) {
	r := Result{Requests: 50000, Elapsed: 2 * time.Second}
	if got := r.RPS(); got != 25000 {
		t.Errorf("RPS = %v, want 25000", got)
	}
	if got := (Result{Requests: 5}).RPS(); got != 0 {
		t.Errorf("RPS without elapsed time = %v, want 0", got)
	}
}

func TestArgs(t *testing.T) {
	c := Config{Conns: 64, Duration: 2500 * time.Millisecond, Headers: []string{"Host: localhost:8081"},
		Script: "/x/random.lua", ScriptArgs: []string{"1000", "m"}, URL: "http://127.0.0.1:1/", CPUs: "1"}
	want := []string{"-t1", "-c64", "-d3s", "--latency", "--timeout", "5s", "-H", "Host: localhost:8081",
		"-s", "/x/random.lua", "http://127.0.0.1:1/", "--", "1000", "m"}
	if got := c.Args(); !slices.Equal(got, want) {
		t.Errorf("Args = %q, want %q", got, want)
	}
	line := c.CommandLine()
	if !strings.HasPrefix(line, "taskset -c 1 wrk -t1 -c64 -d3s") || !strings.Contains(line, "'Host: localhost:8081'") {
		t.Errorf("CommandLine = %q", line)
	}
}

func TestScriptsAreWritten(t *testing.T) {
	dir, err := WriteScripts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{RandomScript, WalkScript, AbsentScript, MixScript} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "function request()") {
			t.Errorf("%s has no request function", name)
		}
	}
}

func TestMixScriptHasEveryAgentAndReferrer(t *testing.T) {
	dir, err := WriteScripts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, MixScript))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		table string
		want  []string
	}{{"agents", MixAgents}, {"referrers", MixReferrers}} {
		got := readLuaTable(t, string(b), tt.table)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s of %s = %q, want %q", tt.table, MixScript, got, tt.want)
		}
	}
}

func TestLuaTableQuotes(t *testing.T) {
	items := []string{
		"",
		`Mozilla/5.0 (compatible; "quoted" bot)`,
		`back\slash and \" both`,
		`ends in a backslash\`,
		"line\nbreak, carriage\rreturn, tab\tand a NUL\x001 before a digit",
		"del\x7f and ünïcode",
		"-- ]] not a comment",
	}
	if got := readLuaTable(t, luaTable("odd", items), "odd"); !slices.Equal(got, items) {
		t.Errorf("the Lua table reads as %q, want %q", got, items)
	}
}

// readLuaTable reads the strings of `local name = { "…", … }` in script as
// Lua 5.1 reads its string literals.
func readLuaTable(t *testing.T, script, name string) []string {
	t.Helper()
	head := "local " + name + " = {\n"
	_, rest, ok := strings.Cut(script, head)
	if !ok {
		t.Fatalf("no %q in the script", head)
	}
	var out []string
	for {
		rest = strings.TrimLeft(rest, " \n")
		if strings.HasPrefix(rest, "}") {
			return out
		}
		s, n, err := readLuaString(rest)
		if err != nil {
			t.Fatalf("table %s, item %d: %v", name, len(out)+1, err)
		}
		out = append(out, s)
		rest, ok = strings.CutPrefix(rest[n:], ",")
		if !ok {
			t.Fatalf("table %s, item %d: no comma after %q", name, len(out), rest[:min(len(rest), 20)])
		}
	}
}

// readLuaString reads the double-quoted Lua string literal at the start of
// s and returns its value and its length in s.
func readLuaString(s string) (string, int, error) {
	if !strings.HasPrefix(s, `"`) {
		return "", 0, errors.New("no string literal")
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), i + 1, nil
		case '\n', '\r':
			return "", 0, errors.New("unfinished string (a line break inside it)")
		case '\\':
			i++
			if i == len(s) {
				return "", 0, errors.New("unfinished string")
			}
			if e := strings.IndexByte(`abfnrtv\"'`, s[i]); e >= 0 {
				b.WriteByte("\a\b\f\n\r\t\v\\\"'"[e])
				continue
			}
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			n, err := strconv.Atoi(s[i:j])
			if err != nil || n > 255 {
				return "", 0, fmt.Errorf("invalid escape sequence at %q", s[i-1:min(len(s), i+3)])
			}
			b.WriteByte(byte(n))
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, errors.New("unfinished string")
}
