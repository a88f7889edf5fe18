// Package wrk runs the wrk load generator (Debian's wrk 4.1), optionally
// pinned to CPUs with taskset, and reads its --latency report.
package wrk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config is one wrk run.
type Config struct {
	// Bin is the wrk binary (default "wrk").
	Bin string
	// CPUs, when set, pins wrk with `taskset -c CPUs`.
	CPUs string
	// Threads (default 1) and Conns (default 64) are -t and -c.
	Threads, Conns int
	// Duration is -d, rounded up to whole seconds.
	Duration time.Duration
	// Timeout is --timeout (default 5s).
	Timeout time.Duration
	// Headers are "Name: value" lines, each a -H.
	Headers []string
	// Script is the path of a Lua script (-s) and ScriptArgs its arguments.
	Script     string
	ScriptArgs []string
	// URL is the target.
	URL string
}

// Args are wrk's command line (without the binary).
func (c Config) Args() []string {
	threads, conns, timeout := c.Threads, c.Conns, c.Timeout
	if threads <= 0 {
		threads = 1
	}
	if conns <= 0 {
		conns = 64
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	args := []string{"-t" + strconv.Itoa(threads), "-c" + strconv.Itoa(conns), "-d" + Seconds(c.Duration),
		"--latency", "--timeout", Seconds(timeout)}
	for _, h := range c.Headers {
		args = append(args, "-H", h)
	}
	if c.Script != "" {
		args = append(args, "-s", c.Script)
	}
	args = append(args, c.URL)
	if len(c.ScriptArgs) > 0 {
		args = append(append(args, "--"), c.ScriptArgs...)
	}
	return args
}

// CommandLine is how the run reads as a shell command, for the reports.
func (c Config) CommandLine() string {
	var b strings.Builder
	if c.CPUs != "" {
		b.WriteString("taskset -c " + c.CPUs + " ")
	}
	b.WriteString("wrk")
	for _, a := range c.Args() {
		b.WriteByte(' ')
		if strings.ContainsAny(a, " ;'\"") {
			a = "'" + a + "'"
		}
		b.WriteString(a)
	}
	return b.String()
}

func (c Config) command(ctx context.Context) *exec.Cmd {
	bin := c.Bin
	if bin == "" {
		bin = "wrk"
	}
	args := c.Args()
	if c.CPUs != "" {
		bin, args = "taskset", append([]string{"-c", c.CPUs, bin}, args...)
	}
	return exec.CommandContext(ctx, bin, args...)
}

// Result is what wrk reports of a run.
type Result struct {
	// Requests is how many responses wrk read in Elapsed.
	Requests int64
	Elapsed  time.Duration
	// P50, P90 and P99 are the latency percentiles of --latency.
	P50, P90, P99 time.Duration
	// SocketErrors are connect, read, write and timeout errors together.
	SocketErrors int64
	// Non2xx3xx counts answers whose status was not 2xx or 3xx.
	Non2xx3xx int64
	// CPU is wrk's own CPU time (user + system, from its rusage).
	CPU time.Duration
	// Output is wrk's report as it printed it.
	Output string
}

// RPS is requests per second over the run.
func (r Result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Run runs wrk to its end (its duration plus a minute at most).
func Run(c Config) (Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.Duration+time.Minute)
	defer cancel()
	cmd := c.command(ctx)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return Result{}, fmt.Errorf("wrk: %w: %s", err, strings.TrimSpace(out.String()))
	}
	r, err := Parse(out.Bytes())
	r.CPU = cpuOf(cmd.ProcessState)
	return r, err
}

// cpuOf is the CPU time of an ended process (taskset execs wrk: the same process).
func cpuOf(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}

// Running is a wrk run in progress, to be interrupted.
type Running struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
}

// Start starts wrk and returns without waiting for it.
func Start(c Config) (*Running, error) {
	// Wait bounds the run: its context is never cancelled.
	r := &Running{cmd: c.command(context.Background()), done: make(chan struct{})}
	r.cmd.Stdout, r.cmd.Stderr = r, r
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("wrk: %w", err)
	}
	go func() {
		r.err = r.cmd.Wait()
		close(r.done)
	}()
	return r, nil
}

func (r *Running) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.Write(b)
}

// Interrupt sends SIGINT: wrk stops and prints its report of the time it ran.
func (r *Running) Interrupt() error { return r.cmd.Process.Signal(syscall.SIGINT) }

// Wait waits up to d for wrk to end and reads its report.
func (r *Running) Wait(d time.Duration) (Result, error) {
	select {
	case <-r.done:
	case <-time.After(d):
		r.cmd.Process.Kill() //nolint:errcheck // gone already is fine
		<-r.done
		return Result{}, fmt.Errorf("wrk did not end within %s", d)
	}
	r.mu.Lock()
	out := r.out.Bytes()
	r.mu.Unlock()
	if r.err != nil {
		return Result{}, fmt.Errorf("wrk: %w: %s", r.err, strings.TrimSpace(string(out)))
	}
	res, err := Parse(out)
	res.CPU = cpuOf(r.cmd.ProcessState)
	return res, err
}

// Done is closed when wrk has ended.
func (r *Running) Done() <-chan struct{} { return r.done }

var (
	reRequests = regexp.MustCompile(`(?m)^\s*(\d+) requests in ([0-9.]+[a-z]+)`)
	reRPS      = regexp.MustCompile(`(?m)^Requests/sec:\s+([0-9.]+)`)
	rePct      = regexp.MustCompile(`(?m)^\s*(50|90|99)%\s+([0-9.]+[a-z]+)`)
	reSocket   = regexp.MustCompile(`(?m)^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	reNon23    = regexp.MustCompile(`(?m)^\s*Non-2xx or 3xx responses: (\d+)`)
)

// Parse reads wrk's --latency report.
func Parse(out []byte) (Result, error) {
	r := Result{Output: string(out)}
	m := reRequests.FindSubmatch(out)
	if m == nil {
		return r, errors.New("cannot read wrk's report: " + strings.TrimSpace(string(out)))
	}
	var err error
	if r.Requests, err = strconv.ParseInt(string(m[1]), 10, 64); err != nil {
		return r, err
	}
	if r.Elapsed, err = ParseDuration(string(m[2])); err != nil {
		return r, err
	}
	// "N requests in 10.00s" keeps two decimals; Requests/sec is exact.
	if m := reRPS.FindSubmatch(out); m != nil && r.Requests > 0 {
		if rps, err := strconv.ParseFloat(string(m[1]), 64); err == nil && rps > 0 {
			r.Elapsed = time.Duration(float64(r.Requests) / rps * float64(time.Second))
		}
	}
	for _, m := range rePct.FindAllSubmatch(out, -1) {
		d, err := ParseDuration(string(m[2]))
		if err != nil {
			return r, err
		}
		switch string(m[1]) {
		case "50":
			r.P50 = d
		case "90":
			r.P90 = d
		case "99":
			r.P99 = d
		}
	}
	if r.Requests > 0 && r.P99 == 0 {
		return r, errors.New("cannot read wrk's latency distribution (run with --latency): " + strings.TrimSpace(string(out)))
	}
	if s := reSocket.FindSubmatch(out); s != nil {
		for _, v := range s[1:] {
			n, _ := strconv.ParseInt(string(v), 10, 64)
			r.SocketErrors += n
		}
	}
	if s := reNon23.FindSubmatch(out); s != nil {
		r.Non2xx3xx, _ = strconv.ParseInt(string(s[1]), 10, 64)
	}
	return r, nil
}

// ParseDuration reads wrk's units: us, ms, s, m, h.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.Replace(s, "us", "µs", 1)
	if strings.HasSuffix(s, "m") {
		s += "0s" // wrk prints minutes as "1.50m"; "1.50m0s" parses
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("cannot read wrk's duration %q: %w", s, err)
	}
	return d, nil
}

// Seconds is d rounded up to whole seconds, as wrk takes it ("10s").
func Seconds(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	return strconv.FormatInt(max(s, 1), 10) + "s"
}

// Scripts, written by WriteScripts: each takes its arguments after "--".
const (
	// RandomScript requests /PREFIX<n> with n uniform in 1..N:
	// arguments N PREFIX.
	RandomScript = "random.lua"
	// WalkScript requests /PREFIX1, /PREFIX2, … /PREFIXN in turn, then
	// starts again at 1: arguments N PREFIX.
	WalkScript = "walk.lua"
	// AbsentScript requests /PREFIX<random>x<random>, paths that name no
	// link: argument PREFIX.
	AbsentScript = "absent.lua"
	// MixScript requests /PREFIX<n> with n uniform in 1..N, each request
	// with a User-Agent drawn from desktop, mobile and tablet browsers (and
	// a few bots), a Referer drawn from common hosts and a long tail (a
	// quarter none), and an X-Forwarded-For of a random IPv4 address (the
	// edge reads it when SHORTLINK_TRUSTED_PROXIES names the loopback): the
	// clicks vary as real ones do. Arguments: N PREFIX [METHOD] (GET, or
	// HEAD: redirects that make no click).
	MixScript = "mix.lua"
)

var scripts = map[string]string{
	RandomScript: `-- /PREFIX<n>, n uniform in 1..N (arguments: N PREFIX)
local n, prefix
function init(args)
  n, prefix = tonumber(args[1]), args[2]
  math.randomseed(os.time())
end
function request()
  return wrk.format(nil, "/" .. prefix .. math.random(n))
end
`,
	WalkScript: `-- /PREFIX1 … /PREFIXN in turn, then again from 1 (arguments: N PREFIX)
local n, prefix, i = 0, "", 0
function init(args)
  n, prefix = tonumber(args[1]), args[2]
end
function request()
  i = i + 1
  if i > n then i = 1 end
  return wrk.format(nil, "/" .. prefix .. i)
end
`,
	MixScript: `-- /PREFIX<n>, n uniform in 1..N, with varied User-Agent, Referer and
-- X-Forwarded-For (arguments: N PREFIX [METHOD])
` + mixTables() + `
local n, prefix, method
function init(args)
  n, prefix, method = tonumber(args[1]), args[2], args[3] or "GET"
  math.randomseed(os.time() + math.floor(os.clock() * 1000000))
end
function request()
  local h = {}
  for k, v in pairs(wrk.headers) do h[k] = v end
  h["User-Agent"] = agents[math.random(#agents)]
  local r = referrers[math.random(#referrers + 4)]
  if r == nil then
    r = "https://site" .. math.random(5000) .. ".example/page"
  end
  if r ~= "" then h["Referer"] = r end
  h["X-Forwarded-For"] = math.random(1, 223) .. "." .. math.random(0, 255) .. "." .. math.random(0, 255) .. "." .. math.random(1, 254)
  return wrk.format(method, "/" .. prefix .. math.random(n), h)
end
`,
	AbsentScript: `-- /PREFIX<random>x<random>: slugs no link has (argument: PREFIX)
local prefix
function init(args)
  prefix = args[1]
  math.randomseed(os.time())
end
function request()
  return wrk.format(nil, "/" .. prefix .. math.random(1000000000) .. "x" .. math.random(1000000000))
end
`,
}

// MixAgents are the User-Agents MixScript (and costbench's paced runs) draw
// from, each as likely: browsers on desktop, mobile and tablet, and a bot.
// MixAgents and MixReferrers are read, never changed: MixScript's text is
// made of them once, when the package is initialized.
var MixAgents = []string{
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
	"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
	"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
	"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
	"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
	"Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/26.0 Chrome/122.0.0.0 Mobile Safari/537.36",
	"Mozilla/5.0 (iPad; CPU OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
	"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
}

// MixReferrers are the Referers MixScript (and costbench's paced runs) draw
// from, "" for none: a draw is uniform over these and four places more, and
// each of those four stands for a page of one of 5,000 other sites.
var MixReferrers = []string{
	"", "", "", "", "", "", "https://www.google.com/", "https://www.google.com/", "https://www.google.com/",
	"https://t.co/", "https://t.co/", "https://www.facebook.com/", "https://www.facebook.com/",
	"https://www.linkedin.com/", "https://www.reddit.com/", "https://news.ycombinator.com/",
	"https://www.instagram.com/", "https://www.youtube.com/", "https://www.bing.com/",
}

// mixTables are MixScript's Lua tables of MixAgents and MixReferrers.
func mixTables() string {
	return luaTable("agents", MixAgents) + "\n" + luaTable("referrers", MixReferrers)
}

// luaTable is Lua declaring the local name as the list of strings.
func luaTable(name string, items []string) string {
	var b strings.Builder
	b.WriteString("local " + name + " = {\n")
	for _, s := range items {
		b.WriteString("  " + luaString(s) + ",\n")
	}
	b.WriteString("}")
	return b.String()
}

// luaString is s as a Lua string literal. Control bytes are written as
// three-digit decimal escapes: the one numeric escape of Lua 5.1, which
// LuaJIT (wrk's Lua) reads too, and three digits always so that a digit
// after one is not read as part of it.
func luaString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "\\%03d", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// WriteScripts writes the Lua scripts into dir and returns dir.
func WriteScripts(dir string) (string, error) {
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return "", fmt.Errorf("cannot write wrk script: %w", err)
		}
	}
	return dir, nil
}
