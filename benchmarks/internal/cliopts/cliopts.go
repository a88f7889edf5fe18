// Package cliopts registers the flags the benchmark commands that start the
// platform's binaries share: the repository root, the folder of the built
// binaries, the working folder and whether it is kept, the report file, and
// the PostgreSQL server of `deploy/local/services up`. Makefile targets and
// docs name these flags: their names and defaults stay as they are.
package cliopts

import "flag"

// Options are the shared flags' values.
type Options struct {
	// Root is the repository root (-root), where deploy/local/services is run.
	Root string
	// Bin is the folder of the built binaries (-bin).
	Bin string
	// Dir is the working folder for data and logs (-dir; "": a new
	// temporary folder).
	Dir string
	// Out is a file the report is also written to (-out; "": none).
	Out string
	// Keep keeps the working folder (-keep).
	Keep bool
	// Postgres is the PostgreSQL server services up creates its database on
	// (-postgres, of RegisterPostgres; "": services' default).
	Postgres string
}

// Register registers -root, -bin, -dir, -out and -keep on fs. binaries
// names what -bin holds, for its help ("controlplane and edge").
func (o *Options) Register(fs *flag.FlagSet, binaries string) {
	fs.StringVar(&o.Root, "root", ".", "the repository root (deploy/local/services is run from it)")
	fs.StringVar(&o.Bin, "bin", "bin", "folder holding "+binaries+" (`make build`)")
	fs.StringVar(&o.Dir, "dir", "", "working folder for data and logs (default: a new temporary folder, removed unless -keep or a failure)")
	fs.StringVar(&o.Out, "out", "", "also write the report (markdown) to this file")
	fs.BoolVar(&o.Keep, "keep", false, "keep the working folder")
}

// RegisterPostgres registers -postgres on fs.
func (o *Options) RegisterPostgres(fs *flag.FlagSet) {
	fs.StringVar(&o.Postgres, "postgres", "", "the PostgreSQL server services up creates its database on (default: SHORTLINK_LOCAL_POSTGRES_URL, else 127.0.0.1:5432)")
}
