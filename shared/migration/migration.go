// Package migration reads the versioned migration files every store embeds:
// NNNN_what.sql, applied in version order, each split into its statements.
// The stores apply them, each in its own way (a transaction per file on SQL
// databases, statement by statement on ClickHouse), and record the versions.
package migration

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// File is one migration.
type File struct {
	Version    int
	Name       string
	Statements []string
}

// Load returns the migrations in dir of fsys (files *.sql), oldest first.
func Load(fsys fs.FS, dir string) ([]File, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	out := make([]File, 0, len(names))
	for _, name := range names {
		base := path.Base(name)
		version, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("migration %s: its name must start with a number", base)
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		out = append(out, File{Version: version, Name: base, Statements: Statements(string(body))})
	}
	return out, nil
}

// Statements splits a migration file on semicolons at line ends, dropping
// comment lines; the files hold no semicolons inside statements.
func Statements(body string) []string {
	var out []string
	for _, part := range strings.Split(body, ";\n") {
		var lines []string
		for _, l := range strings.Split(part, "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "--") {
				lines = append(lines, l)
			}
		}
		if stmt := strings.TrimSuffix(strings.TrimSpace(strings.Join(lines, "\n")), ";"); stmt != "" {
			out = append(out, stmt)
		}
	}
	return out
}
