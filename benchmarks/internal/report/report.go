// Package report prints what the benchmarks measured as markdown: the
// machine and date, tables, and ratios against the targets.
package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Machine describes where a run happened.
type Machine struct {
	CPUs     int
	Model    string
	MemoryGB float64
	Load     string // /proc/loadavg's first three fields
	Go       string
	Kernel   string
	Wrk      string
	Date     time.Time
}

// ReadMachine reads the machine's description now.
func ReadMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Model: cpuModel(), Load: LoadAverage(), Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH, Date: time.Now().UTC()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				m.MemoryGB = kb / (1 << 20)
			}
		}
	}
	if out, err := exec.Command("wrk", "-v").CombinedOutput(); len(out) > 0 {
		_ = err // wrk -v exits 1 after printing its version
		m.Wrk = strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	}
	return m
}

// Markdown is the machine as a markdown table.
func (m Machine) Markdown() string {
	var b strings.Builder
	b.WriteString("| machine | |\n|---|---|\n")
	fmt.Fprintf(&b, "| date (UTC) | %s |\n", m.Date.Format("2006-01-02 15:04"))
	fmt.Fprintf(&b, "| CPUs (nproc) | %d |\n", m.CPUs)
	fmt.Fprintf(&b, "| CPU model | %s |\n", m.Model)
	fmt.Fprintf(&b, "| memory | %.1f GB |\n", m.MemoryGB)
	fmt.Fprintf(&b, "| kernel | %s |\n", m.Kernel)
	fmt.Fprintf(&b, "| Go | %s |\n", m.Go)
	fmt.Fprintf(&b, "| wrk | %s |\n", m.Wrk)
	fmt.Fprintf(&b, "| load average at start | %s |\n", m.Load)
	return b.String()
}

// LoadAverage is /proc/loadavg's 1, 5 and 15 minute averages.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// LoadHigh reports whether load (LoadAverage's) says that other processes
// keep more than half of the cpus busy: figures taken now are noisy.
func LoadHigh(load string, cpus int) bool {
	f := strings.Fields(load)
	if len(f) == 0 {
		return false
	}
	l1, err := strconv.ParseFloat(f[0], 64)
	return err == nil && l1 > 0.5*float64(cpus)
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// Table is a markdown table built row by row.
type Table struct {
	Header []string
	Rows   [][]string
}

// NewTable returns a table with these column names.
func NewTable(header ...string) *Table { return &Table{Header: header} }

// Add appends a row; cells are formatted with %v.
func (t *Table) Add(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = fmt.Sprint(c)
	}
	t.Rows = append(t.Rows, row)
}

// Markdown renders the table, its columns padded to line up.
func (t *Table) Markdown() string {
	width := make([]int, len(t.Header))
	for i, h := range t.Header {
		width[i] = max(width[i], runeLen(h))
	}
	for _, r := range t.Rows {
		for i, c := range r {
			if i < len(width) {
				width[i] = max(width[i], runeLen(c))
			}
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for i := range width {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			b.WriteString(" " + c + strings.Repeat(" ", width[i]-runeLen(c)) + " |")
		}
		b.WriteString("\n")
	}
	line(t.Header)
	b.WriteString("|")
	for _, w := range width {
		b.WriteString(strings.Repeat("-", w+2) + "|")
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		line(r)
	}
	return b.String()
}

func runeLen(s string) int { return len([]rune(s)) }

// Print writes the table to w, followed by an empty line.
func (t *Table) Print(w io.Writer) { fmt.Fprintln(w, t.Markdown()) }

// Ratio is a/b, or 0 when b is 0.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Verdict says whether got meets a target: at least (atLeast) or at most min.
func Verdict(got, target float64, atLeast bool) string {
	ok := got >= target
	if !atLeast {
		ok = got <= target
	}
	if ok {
		return "meets"
	}
	return "MISSES"
}

// Dur formats a duration with three significant figures in a fitting unit.
func Dur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d >= time.Minute:
		return fmt.Sprintf("%.1f min", d.Minutes())
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
	}
}

// Int formats n with thin-space thousands separators ("1 234 567").
func Int(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteRune(' ')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Bytes formats n bytes in MiB.
func Bytes(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// Percentile is the q-quantile (0 < q ≤ 1) of sorted durations by the
// nearest-rank method; 0 for none.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(float64(len(sorted)) * q))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}
