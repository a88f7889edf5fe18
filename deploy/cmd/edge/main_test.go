package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The split edge is deployed many times over: it links neither the control
// plane nor the click store (and its ClickHouse driver). deploy/app keeps
// those in subpackages that only the binaries running them import.
func TestEdgeLinksNoOtherPlane(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"shortlink.dev/controlplane/", "shortlink.dev/analytics/", "github.com/ClickHouse/"} {
			if strings.HasPrefix(pkg, banned) {
				t.Errorf("the edge binary links %s", pkg)
			}
		}
	}
}
