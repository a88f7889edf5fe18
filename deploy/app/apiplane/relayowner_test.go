package apiplane

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestWsFairRelayOwnerStableAcrossRuns: the relay's name is the same at
// every start on a data folder, so a restart takes back its own leases; a
// second process on the folder while the first runs cannot take it.
func TestWsFairRelayOwnerStableAcrossRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	first, release, err := relayOwner(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !relayOwnerRE.MatchString(first) {
		t.Fatalf("owner %q", first)
	}
	// Held while the first run lives (flock: per open file, so this
	// process's second open stands for another process).
	if _, _, err := relayOwner(dir); !errors.Is(err, errOwnerHeld) {
		t.Fatalf("a second run beside the first: %v, want errOwnerHeld", err)
	}
	release()
	again, release2, err := relayOwner(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer release2()
	if again != first {
		t.Fatalf("owner after a restart %q, want %q", again, first)
	}
	fi, err := os.Stat(filepath.Join(dir, relayOwnerFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("relay-owner has mode %v, want 0600", fi.Mode().Perm())
	}
}
