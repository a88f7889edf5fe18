package proc

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"shortlink.dev/benchmarks/internal/cleanup"
)

func TestParseStat(t *testing.T) {
	// A command name with a space and a parenthesis: fields count from the last ')'.
	stat := "4242 (my (odd) prog) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 9 0 100 1000000 2000 18446744073709551615\n"
	got, err := parseStat([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	if want := 3250 * time.Millisecond; got != want {
		t.Errorf("CPU = %s, want %s (utime 250 + stime 75 ticks)", got, want)
	}
	if _, err := parseStat([]byte("4242 (x) S 1 2")); err == nil {
		t.Error("a short stat line was accepted")
	}
}

func TestParseStatus(t *testing.T) {
	status := "Name:\tedge\nVmPeak:\t 2000000 kB\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t9\n"
	m, err := parseStatus([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS != 100<<20 || m.Peak != 200<<20 {
		t.Errorf("got RSS %d peak %d, want %d %d", m.RSS, m.Peak, 100<<20, 200<<20)
	}
	if _, err := parseStatus([]byte("Name:\tedge\n")); err == nil {
		t.Error("a status without VmRSS was accepted")
	}
}

func TestOwnProcess(t *testing.T) {
	if _, err := CPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
}

func TestStartAwaitStop(t *testing.T) {
	p, err := Start(Spec{Name: "sh", Bin: "/bin/sh", Args: []string{"-c", "echo 'listening on 127.0.0.1:1'; exec sleep 30"}, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	found, err := p.Await(10*time.Second, regexp.MustCompile(`listening on (\S+)`))
	if err != nil {
		t.Fatal(err)
	}
	if found[0] != "127.0.0.1:1" {
		t.Errorf("Await found %q", found[0])
	}
	if _, err := p.Mem(); err != nil {
		t.Error(err)
	}
	if waited, ok := p.AwaitIdle(5*time.Second, 10*time.Millisecond); !ok {
		t.Errorf("sleep was not idle after %s", waited)
	}
	// sleep dies of SIGTERM: Stop says so.
	if err := p.Stop(5 * time.Second); err == nil {
		t.Error("Stop of a process killed by SIGTERM returned no error")
	}
}

func TestAwaitReportsEarlyExit(t *testing.T) {
	p, err := Start(Spec{Name: "false", Bin: "/bin/sh", Args: []string{"-c", "echo oops >&2; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Await(10*time.Second, regexp.MustCompile(`never`)); err == nil {
		t.Fatal("Await of an exited process succeeded")
	}
}

func TestStartReady(t *testing.T) {
	apiLine := regexp.MustCompile(`(?m)^API: (http://\S+)$`)
	edgeLine := regexp.MustCompile(`(?m)^Edge: (http://\S+)$`)
	t.Run("OK", func(t *testing.T) {
		var stops cleanup.Stack
		p, found, err := StartReady(Spec{Name: "sh", Bin: "/bin/sh", LogDir: t.TempDir(),
			Args: []string{"-c", "echo 'API: http://127.0.0.1:1/api/v1'; sleep 0.1; echo 'Edge: http://127.0.0.1:2/'; exec sleep 30"}},
			&stops, 10*time.Second, apiLine, edgeLine)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"http://127.0.0.1:1/api/v1", "http://127.0.0.1:2/"}; !slices.Equal(found, want) {
			t.Errorf("found %q, want %q", found, want)
		}
		stops.Run()
		select {
		case <-p.Exited():
		default:
			t.Error("the process runs on after the cleanups ran")
		}
	})
	t.Run("ErrNotReady", func(t *testing.T) {
		var stops cleanup.Stack
		defer stops.Run()
		dir := t.TempDir()
		_, _, err := StartReady(Spec{Name: "sh", Bin: "/bin/sh", LogDir: dir, Args: []string{"-c", "echo $$; exec sleep 30"}},
			&stops, 300*time.Millisecond, apiLine)
		if err == nil {
			t.Fatal("a process without its banner was ready")
		}
		out, err := os.ReadFile(filepath.Join(dir, "sh.stdout.log"))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("cannot read the pid the process printed: %v", err)
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("the process that was not ready is still there (kill -0: %v)", err)
		}
	})
}

func TestParseCPUList(t *testing.T) {
	got, err := ParseCPUList("0, 2-4")
	if err != nil || len(got) != 4 || got[0] != 0 || got[3] != 4 {
		t.Errorf("ParseCPUList = %v, %v", got, err)
	}
	for _, bad := range []string{"", "a", "3-1", "-1"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func TestParseCPUBusy(t *testing.T) {
	stat := "cpu  299493 444 121195 448176 6644 0 19409 692 0 0\n" +
		"cpu0 100 10 50 1000 20 0 30 5 0 0\n" +
		"cpu1 200 0 100 900 10 0 0 0 0 0\n"
	got, err := parseCPUBusy([]byte(stat), []int{0})
	if err != nil {
		t.Fatal(err)
	}
	// user 100 + nice 10 + system 50 + irq 0 + softirq 30 + steal 5 ticks; idle and iowait left out.
	if want := 1950 * time.Millisecond; got != want {
		t.Errorf("busy = %s, want %s", got, want)
	}
	if got, _ := parseCPUBusy([]byte(stat), []int{0, 1}); got != 4950*time.Millisecond {
		t.Errorf("busy of both = %s", got)
	}
	if _, err := parseCPUBusy([]byte(stat), []int{2}); err == nil {
		t.Error("a missing CPU was accepted")
	}
}
