package cli

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/client"
)

// runMembers runs `members list|role|remove …`.
func runMembers(e commandEnv, args []string) error {
	if len(args) == 0 {
		return errors.New("members: want a verb: list, role or remove")
	}
	verb, args := args[0], args[1:]
	fs := newFlagSet("members " + verb)
	var cf clientFlags
	cf.register(fs)
	var page, perPage int
	if verb == "list" {
		fs.IntVar(&page, "page", 0, "page number (from 1)")
		fs.IntVar(&perPage, "per-page", 0, "members per page (1–100)")
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return fmt.Errorf("members %s: %w", verb, err)
	}
	want := map[string]int{"list": 0, "role": 2, "remove": 1}
	n, ok := want[verb]
	if !ok {
		return fmt.Errorf("members %s: unknown verb; want list, role or remove", verb)
	}
	if len(pos) != n {
		return fmt.Errorf("members %s: want %s", verb, map[string]string{"list": "no arguments", "role": "USER_ID ROLE", "remove": "USER_ID"}[verb])
	}
	out, c, err := e.connect(cf)
	if err != nil {
		return err
	}
	switch verb {
	case "role":
		m, err := c.SetMemberRole(e.ctx, pos[0], pos[1])
		if err != nil {
			return err
		}
		return out.write(m, memberTable([]client.Member{*m}))
	case "remove":
		if err := c.RemoveMember(e.ctx, pos[0]); err != nil {
			return err
		}
		return out.write(map[string]any{"id": pos[0], "removed": true}, func(tw *tabwriter.Writer) {
			fmt.Fprintf(tw, "%s\tremoved\n", pos[0])
		})
	}
	ms, _, err := c.ListMembers(e.ctx, client.Page{Page: page, PerPage: perPage})
	if err != nil {
		return err
	}
	return out.write(ms, memberTable(ms))
}

func memberTable(ms []client.Member) func(tw *tabwriter.Writer) {
	return func(tw *tabwriter.Writer) {
		fmt.Fprintln(tw, "ID\tEMAIL\tNAME\tROLE\tJOINED")
		for _, m := range ms {
			email := m.Email
			if email == "" {
				email = "-" // shown only to keys holding members:write
			} else if m.EmailVerified != nil && !*m.EmailVerified {
				email += " (unverified)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.ID, email, m.Name, m.Role, m.JoinedAt.Format("2006-01-02"))
		}
	}
}

// runInvites runs `invites list|create|delete|accept …`. accept needs no
// key; its password comes from SHORTLINK_PASSWORD, never from the command
// line (which other users of the machine can read).
func runInvites(e commandEnv, args []string) error {
	if len(args) == 0 {
		return errors.New("invites: want a verb: list, create, delete or accept")
	}
	verb, args := args[0], args[1:]
	fs := newFlagSet("invites " + verb)
	var cf clientFlags
	cf.register(fs)
	var page, perPage int
	var email, role, name string
	var claim bool
	switch verb {
	case "list":
		fs.IntVar(&page, "page", 0, "page number (from 1)")
		fs.IntVar(&perPage, "per-page", 0, "invites per page (1–100)")
	case "create":
		fs.StringVar(&email, "email", "", "who to invite")
		fs.StringVar(&role, "role", "", "owner, admin, member or viewer")
	case "accept":
		fs.StringVar(&name, "name", "", "your display name (for a new account)")
		fs.BoolVar(&claim, "claim-email", false, "with the link of the invite's email: take the address from an unverified account that is not yours")
	case "delete":
	default:
		return fmt.Errorf("invites %s: unknown verb; want list, create, delete or accept", verb)
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return fmt.Errorf("invites %s: %w", verb, err)
	}
	if n := map[string]int{"list": 0, "create": 0, "delete": 1, "accept": 1}[verb]; len(pos) != n {
		return fmt.Errorf("invites %s: want %d argument(s)", verb, n)
	}
	out, err := e.newOutput(cf)
	if err != nil {
		return err
	}
	if verb == "accept" {
		pw := e.getenv("SHORTLINK_PASSWORD")
		if pw == "" {
			return errors.New("invites accept: set SHORTLINK_PASSWORD to the new account's password (or your existing one's)")
		}
		c, err := client.New(apiBase(cf.api, e.getenv), "", client.WithUserAgent("shortlink-cli/1"))
		if err != nil {
			return err
		}
		res, err := c.AcceptInviteWith(e.ctx, pos[0], api.InviteAcceptance{Name: name, Password: pw, ClaimEmail: claim})
		if err != nil {
			return err
		}
		return out.write(res, func(tw *tabwriter.Writer) {
			fmt.Fprintf(tw, "joined workspace %s as %s (%s)\n", res.WorkspaceID, res.Member.Role, res.Member.Email)
		})
	}
	c, err := e.client(cf)
	if err != nil {
		return err
	}
	switch verb {
	case "create":
		if strings.TrimSpace(email) == "" || role == "" {
			return errors.New("invites create: want --email and --role")
		}
		inv, err := c.CreateInvite(e.ctx, email, role)
		if err != nil {
			return err
		}
		return out.write(inv, func(tw *tabwriter.Writer) {
			fmt.Fprintf(tw, "%s\t%s\t%s\texpires %s\n%s\n", inv.ID, inv.Email, inv.Role, inv.ExpiresAt.Format("2006-01-02 15:04 MST"), inv.AcceptURL)
			switch {
			case inv.EmailSent == nil:
			case *inv.EmailSent:
				fmt.Fprintf(tw, "emailed to %s (with a link of its own)\n", inv.Email)
			default:
				fmt.Fprintf(tw, "not emailed: %s\n", inv.EmailError)
			}
		})
	case "delete":
		if err := c.DeleteInvite(e.ctx, pos[0]); err != nil {
			return err
		}
		return out.write(map[string]any{"id": pos[0], "deleted": true}, func(tw *tabwriter.Writer) {
			fmt.Fprintf(tw, "%s\tdeleted\n", pos[0])
		})
	}
	invs, _, err := c.ListInvites(e.ctx, client.Page{Page: page, PerPage: perPage})
	if err != nil {
		return err
	}
	return out.write(invs, func(tw *tabwriter.Writer) {
		fmt.Fprintln(tw, "ID\tEMAIL\tROLE\tEXPIRES")
		for _, inv := range invs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", inv.ID, inv.Email, inv.Role, inv.ExpiresAt.Format("2006-01-02 15:04"))
		}
	})
}
