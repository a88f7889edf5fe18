// Package proc starts the processes a benchmark measures, optionally pinned
// to CPUs with taskset, and reads what the kernel knows of them: CPU time
// (utime + stime of /proc/PID/stat) and resident memory (/proc/PID/status).
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"shortlink.dev/benchmarks/internal/cleanup"
)

// ClockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100
// on every Linux architecture Go supports.
const ClockTicks = 100

// Process is a started program whose output is kept (and copied to a log file).
type Process struct {
	// Name names the process in errors and logs.
	Name string
	cmd  *exec.Cmd
	out  *output
	errs *output

	exited  chan struct{}
	waitErr error
}

// Spec says what to start.
type Spec struct {
	Name string
	Bin  string
	Args []string
	// Env is the whole environment of the process (nil: this process's).
	Env []string
	// CPUs, when set, pins the process with `taskset -c CPUs` (like "0").
	CPUs string
	// LogDir, when set, receives NAME.stdout.log and NAME.stderr.log.
	LogDir string
}

// Start starts the process described by s.
func Start(s Spec) (*Process, error) {
	bin, args := s.Bin, s.Args
	if s.CPUs != "" {
		// taskset execs the program: the pid stays the program's.
		bin, args = "taskset", append([]string{"-c", s.CPUs, s.Bin}, s.Args...)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = s.Env
	p := &Process{Name: s.Name, cmd: cmd, out: &output{}, errs: &output{}, exited: make(chan struct{})}
	var closers []io.Closer
	stdout, stderr := io.Writer(p.out), io.Writer(p.errs)
	if s.LogDir != "" {
		for _, f := range []struct {
			suffix string
			w      *io.Writer
		}{{".stdout.log", &stdout}, {".stderr.log", &stderr}} {
			lf, err := os.Create(filepath.Join(s.LogDir, s.Name+f.suffix))
			if err != nil {
				return nil, fmt.Errorf("cannot start %s: %w", s.Name, err)
			}
			closers = append(closers, lf)
			*f.w = io.MultiWriter(*f.w, lf)
		}
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		for _, c := range closers {
			c.Close()
		}
		return nil, fmt.Errorf("cannot start %s (%s): %w", s.Name, bin, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		for _, c := range closers {
			c.Close()
		}
		close(p.exited)
	}()
	return p, nil
}

// StartReady starts the process described by s, registers its Stop (30 s,
// then SIGKILL) on stops, and waits up to ready for its stdout to match
// every banner pattern; it returns the first submatch of each, as Await. A
// process not ready in time is killed.
func StartReady(s Spec, stops *cleanup.Stack, ready time.Duration, banner ...*regexp.Regexp) (*Process, []string, error) {
	p, err := Start(s)
	if err != nil {
		return nil, nil, err
	}
	stops.Defer(func() { p.Stop(30 * time.Second) }) //nolint:errcheck // cleanup: best effort
	found, err := p.Await(ready, banner...)
	if err != nil {
		p.Kill()
		return nil, nil, err
	}
	return p, found, nil
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Stdout is everything the process wrote on stdout so far.
func (p *Process) Stdout() string { return p.out.String() }

// Stderr is everything the process wrote on stderr so far.
func (p *Process) Stderr() string { return p.errs.String() }

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Await waits up to d for stdout to match every pattern and returns the
// first submatch of each (the whole match when a pattern has no group).
func (p *Process) Await(d time.Duration, patterns ...*regexp.Regexp) ([]string, error) {
	deadline := time.After(d)
	for {
		out := p.Stdout()
		found := make([]string, 0, len(patterns))
		for _, re := range patterns {
			m := re.FindStringSubmatch(out)
			if m == nil {
				break
			}
			found = append(found, m[len(m)-1])
		}
		if len(found) == len(patterns) {
			return found, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%s exited before it was ready (%v); stderr:\n%s", p.Name, p.waitErr, tail(p.Stderr(), 4000))
		case <-deadline:
			return nil, fmt.Errorf("%s was not ready within %s; stdout:\n%s\nstderr:\n%s", p.Name, d, tail(out, 2000), tail(p.Stderr(), 4000))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Wait waits up to d for the process to exit and returns how it exited.
func (p *Process) Wait(d time.Duration) error {
	select {
	case <-p.exited:
		return p.waitErr
	case <-time.After(d):
		return fmt.Errorf("%s did not exit within %s", p.Name, d)
	}
}

// Stop sends SIGTERM and waits up to d for the process to exit, then kills
// it. It returns an error unless the process exited 0 on its own.
func (p *Process) Stop(d time.Duration) error {
	select {
	case <-p.exited:
		return p.waitErr
	default:
	}
	if err := p.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	if err := p.Wait(d); err != nil {
		p.Kill()
		return err
	}
	return nil
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Process) Kill() {
	p.cmd.Process.Kill() //nolint:errcheck // gone already is fine
	<-p.exited
}

// CPU is the CPU time (user + system, all threads) the process has used.
func (p *Process) CPU() (time.Duration, error) { return CPU(p.PID()) }

// CPU is the CPU time (user + system, all threads) process pid has used.
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStat(b)
}

// parseStat reads utime + stime from the text of /proc/PID/stat. The second
// field (the command name, in parentheses) may hold spaces and parentheses:
// the fields are counted from the last ')'.
func parseStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("cannot read /proc/PID/stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, errors.New("cannot read /proc/PID/stat: too few fields")
	}
	utime, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cannot read utime of /proc/PID/stat: %w", err)
	}
	stime, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cannot read stime of /proc/PID/stat: %w", err)
	}
	return time.Duration(utime+stime) * (time.Second / ClockTicks), nil
}

// Memory is what /proc/PID/status says of a process's memory, in bytes.
type Memory struct {
	// RSS is VmRSS, the resident set now; Peak is VmHWM, its high-water mark.
	RSS, Peak int64
}

// Mem reads the process's resident memory.
func (p *Process) Mem() (Memory, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID()) + "/status")
	if err != nil {
		return Memory{}, err
	}
	return parseStatus(b)
}

// parseStatus reads VmRSS and VmHWM (kB) from the text of /proc/PID/status.
func parseStatus(b []byte) (Memory, error) {
	var m Memory
	var found int
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return m, fmt.Errorf("cannot read %s of /proc/PID/status: %q", k, strings.TrimSpace(v))
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("cannot read %s of /proc/PID/status: %w", k, err)
		}
		if k == "VmRSS" {
			m.RSS = n << 10
		} else {
			m.Peak = n << 10
		}
		found++
	}
	if found != 2 {
		return m, errors.New("cannot read /proc/PID/status: VmRSS or VmHWM missing")
	}
	return m, nil
}

// AwaitIdle waits, up to limit, until the process used at most slack of CPU
// in each of two consecutive windows of 250 ms: the work a load left behind
// (clicks being stored or sent) is done. It returns how long it waited and
// whether the process went idle.
func (p *Process) AwaitIdle(limit, slack time.Duration) (time.Duration, bool) {
	start := time.Now()
	prev, err := p.CPU()
	if err != nil {
		return 0, false
	}
	quiet := 0
	for time.Since(start) < limit {
		time.Sleep(250 * time.Millisecond)
		cur, err := p.CPU()
		if err != nil {
			return time.Since(start), false
		}
		if cur-prev <= slack {
			quiet++
			if quiet == 2 {
				return time.Since(start), true
			}
		} else {
			quiet = 0
		}
		prev = cur
	}
	return time.Since(start), false
}

// output is a buffer written by the process's copier and read by Await.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(b)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// ParseCPUList reads a taskset CPU list like "0", "0,2" or "0-3".
func ParseCPUList(s string) ([]int, error) {
	var cpus []int
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("invalid CPU list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("invalid CPU list %q", s)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// CPUBusy is how long the CPUs have been busy (not idle, not waiting for
// I/O; time stolen by the hypervisor counts as busy), summed, from /proc/stat.
func CPUBusy(cpus []int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	return parseCPUBusy(b, cpus)
}

func parseCPUBusy(b []byte, cpus []int) (time.Duration, error) {
	want := map[string]bool{}
	for _, c := range cpus {
		want["cpu"+strconv.Itoa(c)] = true
	}
	var ticks int64
	found := 0
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 9 || !want[f[0]] {
			continue
		}
		// user nice system idle iowait irq softirq steal (guest is in user).
		for i, v := range f[1:9] {
			if i == 3 || i == 4 {
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("cannot read /proc/stat %s: %w", f[0], err)
			}
			ticks += n
		}
		found++
	}
	if found != len(want) {
		return 0, fmt.Errorf("cannot find CPUs %v in /proc/stat", cpus)
	}
	return time.Duration(ticks) * (time.Second / ClockTicks), nil
}

// CopyFile copies the executable src to dst (mode 0755): a benchmark runs
// its own copy of a binary, which a rebuild during the run cannot change.
func CopyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
