package crashpoint

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestHereKills runs this test binary again with the point armed and checks
// that it dies of SIGKILL at the N-th pass, not before.
func TestHereKills(t *testing.T) {
	if os.Getenv("CRASHPOINT_CHILD") == "1" {
		for i := 1; i <= 3; i++ {
			os.Stdout.WriteString("pass " + string(rune('0'+i)) + "\n")
			Here("p")
		}
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHereKills$")
	cmd.Env = append(os.Environ(), "CRASHPOINT_CHILD=1", Env+"=p:2")
	out, err := cmd.Output()
	ee, ok := err.(*exec.ExitError)
	if !ok {
		t.Fatalf("the child was not killed: err %v, output %q", err, out)
	}
	if ws := ee.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child ended with %v, want SIGKILL", ee)
	}
	if got := string(out); !strings.Contains(got, "pass 2") || strings.Contains(got, "pass 3") {
		t.Fatalf("the child got to %q; want killed at its second pass", got)
	}
}

func TestUnarmed(t *testing.T) {
	for _, v := range []string{"", "p:0", "p:x"} {
		arm(v)
		if Armed() {
			t.Errorf("arm(%q) armed the point", v)
		}
		Here("p") // must return
	}
	arm("q")
	Here("p") // another point: returns
	arm("")
}
