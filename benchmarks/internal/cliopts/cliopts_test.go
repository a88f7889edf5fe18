package cliopts

import (
	"flag"
	"io"
	"testing"
)

func TestRegister(t *testing.T) {
	parse := func(t *testing.T, postgres bool, args ...string) Options {
		t.Helper()
		var o Options
		fs := flag.NewFlagSet("bench", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.Register(fs, "controlplane and edge")
		if postgres {
			o.RegisterPostgres(fs)
		}
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return o
	}
	t.Run("Defaults", func(t *testing.T) {
		if got, want := parse(t, true), (Options{Root: ".", Bin: "bin"}); got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
	})
	t.Run("Set", func(t *testing.T) {
		got := parse(t, true, "-root", "/r", "-bin", "/r/bin", "-dir", "/tmp/d", "-out", "r.md", "-keep",
			"-postgres", "postgres://127.0.0.1:5433/")
		want := Options{Root: "/r", Bin: "/r/bin", Dir: "/tmp/d", Out: "r.md", Keep: true, Postgres: "postgres://127.0.0.1:5433/"}
		if got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
	})
	t.Run("BinHelpNamesTheBinaries", func(t *testing.T) {
		var o Options
		fs := flag.NewFlagSet("bench", flag.ContinueOnError)
		o.Register(fs, "controlplane and edge")
		if got, want := fs.Lookup("bin").Usage, "folder holding controlplane and edge (`make build`)"; got != want {
			t.Errorf("-bin help %q, want %q", got, want)
		}
	})
}
