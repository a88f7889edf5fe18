// Package cli is the command line shared by the `controlplane` binary and the
// standalone `shortlink` binary: `serve` and `admin …`, and the API client
// commands. What serve starts is the binary's (Program.Serve, wired in
// deploy/app).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"shortlink.dev/controlplane/admin"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/sqlstore"
)

// Program describes a binary: its name, whether it serves without a command,
// and how it serves.
type Program struct {
	Name string
	// ServeByDefault runs serve when no command is given.
	ServeByDefault bool
	// Serve runs the server until SIGINT or SIGTERM (deploy/app puts the
	// planes of the binary together); the banner goes to stdout, the log to
	// stderr.
	Serve func(ctx context.Context, stdout, stderr io.Writer) error
}

func (p Program) usage() string {
	return fmt.Sprintf(`usage:
  %[1]s serve            start the server (settings: SHORTLINK_* environment variables, see README)
  %[1]s %[2]s`, p.Name, admin.Usage[len("admin commands:\n  "):])
}

// Main runs the program with its arguments (without the program name).
func Main(ctx context.Context, p Program, args []string, stdout, stderr io.Writer) error {
	cmd := ""
	if len(args) > 0 {
		cmd = args[0]
	} else if p.ServeByDefault {
		cmd = "serve"
	}
	switch cmd {
	case "serve":
		if len(args) > 1 {
			return fmt.Errorf("serve takes no arguments; settings come from SHORTLINK_* variables\n%s", p.usage())
		}
		if p.Serve == nil {
			return fmt.Errorf("%s cannot serve\n%s", p.Name, p.usage())
		}
		return p.Serve(ctx, stdout, stderr)
	case "admin":
		cfg, err := config.Load(nil)
		if err != nil {
			return err
		}
		st, err := sqlstore.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
		if err != nil {
			return err
		}
		defer st.Close()
		return admin.Run(ctx, st, args[1:], stdout)
	case "probe":
		// A health check for images without curl: probe URL exits 0 on a 2xx.
		if len(args) != 2 {
			return errors.New("usage: probe URL")
		}
		return probe(ctx, args[1])
	// API client commands for scripts (links.go).
	case "links":
		return runLinks(commandEnv{ctx: ctx, stdout: stdout, getenv: os.Getenv}, args[1:])
	case "stats":
		return runStats(commandEnv{ctx: ctx, stdout: stdout, getenv: os.Getenv}, args[1:])
	case "analytics":
		return runAnalytics(commandEnv{ctx: ctx, stdout: stdout, getenv: os.Getenv}, args[1:])
	case "import":
		return runImport(commandEnv{ctx: ctx, stdout: stdout, getenv: os.Getenv}, args[1:]) // imports.go
	case "audit":
		return runAudit(commandEnv{ctx: ctx, stdout: stdout, getenv: os.Getenv}, args[1:])
	case "members":
		return runMembers(commandEnv{ctx: ctx, stdout: stdout, getenv: os.Getenv}, args[1:])
	case "invites":
		return runInvites(commandEnv{ctx: ctx, stdout: stdout, getenv: os.Getenv}, args[1:])
	case "openapi":
		return runOpenAPI(stdout, args[1:])
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, p.usage())
		fmt.Fprintln(stdout, clientUsage)
		return nil
	}
	return errors.New(p.usage())
}

func probe(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s answered %s", url, res.Status)
	}
	return nil
}
