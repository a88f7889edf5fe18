// Package admin is the operator's command line (`shortlink admin …`,
// `controlplane admin …`) and the bootstrap of the first workspace and key. It
// works on the same storage as a running server, and prints JSON.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"

	"shortlink.dev/shared/config"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/workspace"
)

// DefaultWorkspace is the name of the workspace made at the first start.
const DefaultWorkspace = "default"

// Usage is the help text of the admin commands.
const Usage = `admin commands:
  admin workspace create --name NAME [--plan free|pro|business|scale|enterprise]
  admin workspace set-plan --workspace ID --plan PLAN
  admin key create --workspace ID --name NAME (--permissions p1,p2,… | --all)`

// Run runs one admin command (args after "admin") and prints its JSON result.
func Run(ctx context.Context, st workspace.Store, args []string, stdout io.Writer) error {
	if len(args) < 2 {
		return errors.New(Usage)
	}
	now := time.Now()
	fs := flag.NewFlagSet("admin "+args[0]+" "+args[1], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	switch args[0] + " " + args[1] {
	case "workspace create":
		name := fs.String("name", "", "workspace name")
		plan := fs.String("plan", string(workspace.Free), "plan")
		if err := parse(fs, args[2:]); err != nil {
			return err
		}
		if strings.TrimSpace(*name) == "" {
			return errors.New("--name is required")
		}
		p, err := workspace.ParsePlan(*plan)
		if err != nil {
			return fmt.Errorf("--plan: %w", err)
		}
		w := &workspace.Workspace{ID: uuid.NewString(), Name: strings.TrimSpace(*name), Plan: p, CreatedAt: now}
		if err := st.CreateWorkspace(ctx, w); err != nil {
			return err
		}
		return printJSON(stdout, workspaceJSON(w))
	case "workspace set-plan":
		wsID := fs.String("workspace", "", "workspace id")
		plan := fs.String("plan", "", "plan")
		if err := parse(fs, args[2:]); err != nil {
			return err
		}
		p, err := workspace.ParsePlan(*plan)
		if err != nil {
			return fmt.Errorf("--plan: %w", err)
		}
		if err := st.SetPlan(ctx, *wsID, p); err != nil {
			return workspaceError(*wsID, err)
		}
		w, err := st.GetWorkspace(ctx, *wsID)
		if err != nil {
			return err
		}
		return printJSON(stdout, workspaceJSON(w))
	case "key create":
		wsID := fs.String("workspace", "", "workspace id")
		name := fs.String("name", "", "key name")
		perms := fs.String("permissions", "", "comma-separated permissions")
		all := fs.Bool("all", false, "every permission")
		if err := parse(fs, args[2:]); err != nil {
			return err
		}
		if strings.TrimSpace(*name) == "" {
			return errors.New("--name is required")
		}
		var list []workspace.Permission
		switch {
		case *all && *perms != "":
			return errors.New("give --permissions or --all, not both")
		case *all:
			list = workspace.AllPermissions
		case *perms == "":
			return errors.New("--permissions or --all is required")
		default:
			var err error
			if list, err = workspace.ParsePermissions(strings.Split(*perms, ",")); err != nil {
				return fmt.Errorf("--permissions: %w", err)
			}
		}
		if _, err := st.GetWorkspace(ctx, *wsID); err != nil {
			return workspaceError(*wsID, err)
		}
		k, value := workspace.NewAPIKey(*wsID, strings.TrimSpace(*name), list, now)
		if err := st.CreateAPIKey(ctx, k); err != nil {
			return err
		}
		return printJSON(stdout, map[string]any{"id": k.ID, "key": value, "permissions": k.Permissions})
	}
	return fmt.Errorf("unknown command %q\n%s", strings.Join(args[:2], " "), Usage)
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%s: %w\n%s", fs.Name(), err, Usage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q\n%s", fs.Name(), fs.Arg(0), Usage)
	}
	return nil
}

func workspaceError(id string, err error) error {
	if fault.Is(err, fault.NotFound) {
		return fmt.Errorf("no workspace with id %q", id)
	}
	return err
}

func workspaceJSON(w *workspace.Workspace) map[string]any {
	return map[string]any{"id": w.ID, "name": w.Name, "plan": w.Plan}
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Bootstrap makes sure someone can use the API. With SHORTLINK_BOOTSTRAP_API_KEY
// it ensures the workspace "default" on SHORTLINK_BOOTSTRAP_PLAN holding a key of
// exactly that value with every permission, and returns "". Otherwise, on the
// first start (no workspace "default" yet), it creates that workspace with a
// generated all-permission key and returns the key's value, to be shown once.
func Bootstrap(ctx context.Context, st workspace.Store, cfg *config.Config) (string, error) {
	now := time.Now()
	w, err := st.FindWorkspaceByName(ctx, DefaultWorkspace)
	switch {
	case fault.Is(err, fault.NotFound):
		w = &workspace.Workspace{ID: uuid.NewString(), Name: DefaultWorkspace, Plan: cfg.BootstrapPlan, CreatedAt: now}
		if err := st.CreateWorkspace(ctx, w); err != nil {
			return "", fmt.Errorf("bootstrap: %w", err)
		}
	case err != nil:
		return "", fmt.Errorf("bootstrap: %w", err)
	case cfg.BootstrapAPIKey == "":
		return "", nil // not the first start
	}

	if cfg.BootstrapAPIKey == "" {
		k, value := workspace.NewAPIKey(w.ID, "bootstrap", workspace.AllPermissions, now)
		if err := st.CreateAPIKey(ctx, k); err != nil {
			return "", fmt.Errorf("bootstrap: %w", err)
		}
		return value, nil
	}
	if w.Plan != cfg.BootstrapPlan {
		if err := st.SetPlan(ctx, w.ID, cfg.BootstrapPlan); err != nil {
			return "", fmt.Errorf("bootstrap: %w", err)
		}
	}
	hash := workspace.HashKey(cfg.BootstrapAPIKey)
	if _, err := st.APIKeyByHash(ctx, hash); err == nil {
		return "", nil
	} else if !fault.Is(err, fault.NotFound) {
		return "", fmt.Errorf("bootstrap: %w", err)
	}
	k, _ := workspace.NewAPIKey(w.ID, "bootstrap", workspace.AllPermissions, now)
	k.Hash = hash
	if err := st.CreateAPIKey(ctx, k); err != nil {
		return "", fmt.Errorf("bootstrap: %w", err)
	}
	return "", nil
}
